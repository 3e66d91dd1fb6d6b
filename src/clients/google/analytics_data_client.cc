#include "clients/google/analytics_data_client.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "clients/http/http_request.h"

namespace skippr {
namespace {

struct ApiError {
  std::string status;   // RESOURCE_EXHAUSTED, INVALID_ARGUMENT, ...
  std::string message;  // as the API wrote it, cut to a sentence's length
};

ApiError api_error(const std::string& body) {
  ApiError out;
  const auto json = nlohmann::json::parse(body, nullptr, false);
  if (json.is_object() && json.contains("error") && json["error"].is_object()) {
    out.status = json["error"].value("status", "");
    out.message = json["error"].value("message", "");
  }
  if (out.message.size() > 300) out.message = out.message.substr(0, 300) + "...";
  return out;
}

bool daily_quota(const ApiError& e) {
  std::string lower = e.message;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("per day") != std::string::npos;
}

bool retried_later(long status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

}  // namespace

AnalyticsDataClient::AnalyticsDataClient(AnalyticsDataConfig config)
    : config_(std::move(config)), tokens_(config_.account, kAnalyticsReadonlyScope) {
  if (config_.endpoint.empty()) config_.endpoint = "https://analyticsdata.googleapis.com";
  while (config_.endpoint.ends_with('/')) config_.endpoint.pop_back();
  where_ = fmt::format("{}: GA4 property {}", config_.where, config_.property_id);
}

Status AnalyticsDataClient::refused(long status, const std::string& body) const {
  const ApiError e = api_error(body);
  const std::string said = e.message.empty() ? fmt::format("HTTP {}", status) : e.message;
  if (status == 429 && daily_quota(e)) {
    return fail(ErrorKind::kUnavailable,
                fmt::format("{} has used its API tokens for the day ({}); nothing is lost: run again after midnight "
                            "Pacific time, when Google renews a property's daily tokens",
                            where_, said));
  }
  if (status == 401 || status == 403) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} refused the service account {} (HTTP {}: {}); give it the Viewer role on the "
                            "property, or fix property_id",
                            where_, config_.account.client_email, status, said));
  }
  if (status == 404) {
    return fail(ErrorKind::kConfig, fmt::format("{} does not exist (HTTP 404: {}); fix property_id", where_, said));
  }
  if (retried_later(status)) {
    return fail(ErrorKind::kUnavailable, fmt::format("{}: HTTP {} ({}), still after retrying for {:.0f} s", where_,
                                                     status, said, config_.retry_seconds));
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{} refused the report (HTTP {}: {}); fix the source's dimensions, metrics or dates", where_,
                          status, said));
}

Result<nlohmann::json> AnalyticsDataClient::run_report(const nlohmann::json& request) {
  const std::string body = request.dump();
  const std::string url =
      fmt::format("{}/v1beta/properties/{}:runReport", config_.endpoint, url_encode(config_.property_id));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.retry_seconds);
  double pause = 1.0;
  bool refreshed = false;
  while (true) {
    auto token = tokens_.token();
    if (!token) return std::unexpected(token.error());
    HttpRequest http;
    http.method = "POST";
    http.url = url;
    http.headers = {"Authorization: Bearer " + *token, "Content-Type: application/json", "Accept: application/json",
                    "User-Agent: skipprd/1"};
    http.body = body;
    http.timeout_seconds = config_.timeout_seconds;
    http.stop = config_.stop;
    auto response = http_send(http);
    if (response && response->status == 200) {
      auto json = nlohmann::json::parse(response->body, nullptr, false);
      if (json.is_object()) return json;
    }
    if (response && response->status == 401 && !refreshed) {
      // A token the API no longer takes (expired early, revoked): once more with a new one.
      refreshed = true;
      tokens_.invalidate();
      continue;
    }
    const bool out_of_time = std::chrono::steady_clock::now() + std::chrono::duration<double>(pause) > deadline;
    std::string why;
    if (!response) {
      // No connection, or the answer was lost: a report is safe to ask for again.
      if (out_of_time) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", where_, response.error().message));
      why = response.error().message;
    } else if (response->status == 200) {
      if (out_of_time) return fail(ErrorKind::kUnavailable, fmt::format("{}: its answer is not JSON", where_));
      why = "with something that is not JSON";
    } else {
      const bool daily = response->status == 429 && daily_quota(api_error(response->body));
      if (!retried_later(response->status) || daily || out_of_time) {
        return std::unexpected(refused(response->status, response->body).error());
      }
      why = fmt::format("HTTP {}", response->status);
    }
    if (config_.stop && config_.stop->load()) return fail(ErrorKind::kUnavailable, fmt::format("{}: stopped", where_));
    spdlog::warn("{}: runReport answered {}; asking again in {:.0f} s", where_, why, pause);
    std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    pause = std::min(pause * 2, 30.0);
  }
}

}  // namespace skippr
