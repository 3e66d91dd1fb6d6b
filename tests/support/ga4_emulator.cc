#include "support/ga4_emulator.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "support/google_oauth.h"
#include "support/process.h"

namespace skippr::test {
namespace {

const std::vector<std::string> kCountries = {"Brazil", "France", "Germany", "Japan", "Kenya", "United States"};
const std::vector<std::string> kDevices = {"desktop", "mobile", "tablet"};
const std::vector<std::string> kDimensions = {"date", "country", "deviceCategory"};
const std::vector<std::pair<std::string, std::string>> kMetrics = {{"sessions", "TYPE_INTEGER"},
                                                                   {"engagementRate", "TYPE_FLOAT"},
                                                                   {"purchaseRevenue", "TYPE_CURRENCY"},
                                                                   {"averageSessionDuration", "TYPE_SECONDS"}};

std::optional<int64_t> iso_days(const std::string& text) {
  int y = 0;
  unsigned m = 0, d = 0;
  if (text.size() != 10 || std::sscanf(text.c_str(), "%4d-%2u-%2u", &y, &m, &d) != 3) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(m), std::chrono::day(d)};
  if (!ymd.ok()) return std::nullopt;
  return std::chrono::sys_days(ymd).time_since_epoch().count();
}

std::string day_text(int64_t days, bool compact) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::days(days))};
  return fmt::format(fmt::runtime(compact ? "{:04}{:02}{:02}" : "{:04}-{:02}-{:02}"), static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
}

uint64_t mix(int64_t day, size_t country, size_t device) {
  uint64_t h = static_cast<uint64_t>(day) * 0x9E3779B97F4A7C15ULL ^ (country + 1) * 0xC2B2AE3D27D4EB4FULL ^
               (device + 1) * 0x165667B19E3779F9ULL;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ULL;
  return h ^ (h >> 32);
}

nlohmann::json int64_field(const nlohmann::json& request, const char* key, int64_t otherwise) {
  if (!request.contains(key)) return otherwise;
  const auto& v = request[key];
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) {
    try {
      return std::stoll(v.get<std::string>());
    } catch (...) {
    }
  }
  return nullptr;
}

}  // namespace

struct Ga4Emulator::Impl {
  TempDir dir;
  std::optional<GoogleOAuthAccount> account;
  httplib::Server server;
  mutable std::mutex mutex;
  int64_t today = *iso_days("2026-11-11");
  int64_t daily_tokens = 200000;
  int64_t tokens_used = 0;
  int throttled = 0;
  int64_t reports_today = 0;  // today's figures move with every report
  std::vector<Call> calls;

  static void reply(httplib::Response& res, int status, const nlohmann::json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  // The figures of one row as they stand now; nullopt when the row does not exist (yet).
  std::optional<Row> row(int64_t day, size_t c, size_t d) const {
    const int64_t age = today - day;
    if (age < 0) return std::nullopt;
    if (kCountries[c] == "Kenya" && kDevices[d] == "tablet" && age < 1) return std::nullopt;  // late to appear
    const uint64_t h = mix(day, c, d);
    const int64_t final_sessions = 50 + static_cast<int64_t>(h % 950);
    const int64_t percent = age == 0 ? 40 + std::min<int64_t>(reports_today, 15) : age == 1 ? 80 : age == 2 ? 95 : 100;
    Row r;
    r.date = day_text(day, false);
    r.country = kCountries[c];
    r.device = kDevices[d];
    r.sessions = final_sessions * percent / 100;
    r.engagement_rate = static_cast<double>(300 + (h >> 8) % 500 + std::min<int64_t>(age, 3) * 7) / 1000.0;
    r.purchase_revenue = static_cast<double>(r.sessions * static_cast<int64_t>((h >> 16) % 13)) / 100.0;
    r.average_session_duration = 30.5 + static_cast<double>((h >> 24) % 400);
    return r;
  }

  std::vector<Row> rows(int64_t from, int64_t to) const {
    std::vector<Row> out;
    for (int64_t day = from; day <= to; ++day) {
      for (size_t c = 0; c < kCountries.size(); ++c) {
        for (size_t d = 0; d < kDevices.size(); ++d) {
          if (auto r = row(day, c, d)) out.push_back(*r);
        }
      }
    }
    return out;
  }

  std::optional<int64_t> resolve(const std::string& text) const {
    if (text == "today") return today;
    if (text == "yesterday") return today - 1;
    if (text.ends_with("daysAgo")) {
      try {
        return today - std::stoll(text.substr(0, text.size() - 7));
      } catch (...) {
        return std::nullopt;
      }
    }
    return iso_days(text);
  }

  nlohmann::json quota(int64_t cost) const {
    auto pair = [](int64_t consumed, int64_t remaining) {
      return nlohmann::json{{"consumed", consumed}, {"remaining", remaining}};
    };
    return {{"tokensPerDay", pair(cost, daily_tokens - tokens_used)},
            {"tokensPerHour", pair(cost, 40000)},
            {"concurrentRequests", pair(0, 10)},
            {"serverErrorsPerProjectPerHour", pair(0, 10)},
            {"potentiallyThresholdedRequestsPerHour", pair(0, 120)},
            {"tokensPerProjectPerHour", pair(cost, 14000)}};
  }

  // The answer to one runReport, under the lock.
  std::pair<int, nlohmann::json> report(const std::string& property, const std::string& body) {
    if (property != kProperty) {
      return {403,
              google_api_error(403, "PERMISSION_DENIED", "forbidden",
                               "User does not have sufficient permissions for this property. To learn more "
                               "about Property ID, see "
                               "https://developers.google.com/analytics/devguides/reporting/data/v1/property-id.")};
    }
    const auto request = nlohmann::json::parse(body, nullptr, false);
    auto invalid = [](const std::string& message) {
      return std::pair<int, nlohmann::json>{400, google_api_error(400, "INVALID_ARGUMENT", "badRequest", message)};
    };
    if (!request.is_object()) return invalid("Invalid JSON payload received.");
    if (throttled > 0) {
      --throttled;
      return {429, google_api_error(429, "RESOURCE_EXHAUSTED", "rateLimitExceeded",
                                    "Exhausted property tokens per hour. This quota is replenished within the hour.")};
    }
    if (tokens_used + kTokensPerReport > daily_tokens) {
      return {429, google_api_error(429, "RESOURCE_EXHAUSTED", "rateLimitExceeded",
                                    "Exhausted property tokens per day. The property's daily quota is replenished at "
                                    "midnight Pacific time.")};
    }
    std::vector<size_t> dims;
    for (const auto& d : request.value("dimensions", nlohmann::json::array())) {
      const std::string name = d.value("name", "");
      auto it = std::find(kDimensions.begin(), kDimensions.end(), name);
      if (it == kDimensions.end()) {
        return invalid(
            fmt::format("Field {} is not a valid dimension. For a list of valid dimensions and metrics, see "
                        "https://developers.google.com/analytics/devguides/reporting/data/v1/api-schema",
                        name));
      }
      dims.push_back(static_cast<size_t>(it - kDimensions.begin()));
    }
    std::vector<size_t> metrics;
    for (const auto& m : request.value("metrics", nlohmann::json::array())) {
      const std::string name = m.value("name", "");
      auto it = std::find_if(kMetrics.begin(), kMetrics.end(), [&](const auto& k) { return k.first == name; });
      if (it == kMetrics.end()) {
        return invalid(
            fmt::format("Field {} is not a valid metric. For a list of valid dimensions and metrics, see "
                        "https://developers.google.com/analytics/devguides/reporting/data/v1/api-schema",
                        name));
      }
      metrics.push_back(static_cast<size_t>(it - kMetrics.begin()));
    }
    if (metrics.empty()) return invalid("At least one metric is required.");
    const auto ranges = request.value("dateRanges", nlohmann::json::array());
    if (ranges.size() != 1) return invalid("The emulator answers exactly one dateRange.");
    const auto from = resolve(ranges[0].value("startDate", "")), to = resolve(ranges[0].value("endDate", ""));
    if (!from || !to || *from > *to) return invalid("Invalid dateRange: startDate must be a date before endDate.");
    const auto limit = int64_field(request, "limit", 10000), offset = int64_field(request, "offset", 0);
    if (!limit.is_number() || !offset.is_number() || limit.get<int64_t>() < 0 || limit.get<int64_t>() > 250000 ||
        offset.get<int64_t>() < 0) {
      return invalid("limit must be 0 to 250000 and offset 0 or more.");
    }
    tokens_used += kTokensPerReport;
    ++reports_today;

    // Group the rows by the requested dimensions.
    struct Sum {
      std::vector<std::string> keys;
      int64_t sessions = 0;
      double revenue = 0, engagement = 0, duration = 0;
    };
    std::map<std::vector<std::string>, Sum> groups;
    for (const Row& r : rows(*from, *to)) {
      std::vector<std::string> key;
      for (size_t d : dims) key.push_back(d == 0 ? day_text(*iso_days(r.date), true) : d == 1 ? r.country : r.device);
      Sum& s = groups[key];
      s.keys = key;
      s.sessions += r.sessions;
      s.revenue += r.purchase_revenue;
      s.engagement += r.engagement_rate * static_cast<double>(r.sessions);
      s.duration += r.average_session_duration * static_cast<double>(r.sessions);
    }
    std::vector<Sum> ordered;
    for (auto& [_, s] : groups) ordered.push_back(s);
    std::vector<size_t> order_by;  // positions in the requested dimensions
    for (const auto& o : request.value("orderBys", nlohmann::json::array())) {
      const std::string name = o.value("dimension", nlohmann::json::object()).value("dimensionName", "");
      for (size_t i = 0; i < dims.size(); ++i) {
        if (kDimensions[dims[i]] == name) order_by.push_back(i);
      }
    }
    if (order_by.empty()) {
      // GA4's own order when none is asked for: the most sessions first.
      std::stable_sort(ordered.begin(), ordered.end(),
                       [](const Sum& a, const Sum& b) { return a.sessions > b.sessions; });
    } else {
      std::stable_sort(ordered.begin(), ordered.end(), [&](const Sum& a, const Sum& b) {
        for (size_t i : order_by) {
          if (a.keys[i] != b.keys[i]) return a.keys[i] < b.keys[i];
        }
        return false;
      });
    }
    nlohmann::json answer = {{"kind", "analyticsData#runReport"},
                             {"metadata", {{"currencyCode", "USD"}, {"timeZone", "Etc/UTC"}}}};
    answer["dimensionHeaders"] = nlohmann::json::array();
    for (size_t d : dims) answer["dimensionHeaders"].push_back({{"name", kDimensions[d]}});
    answer["metricHeaders"] = nlohmann::json::array();
    for (size_t m : metrics)
      answer["metricHeaders"].push_back({{"name", kMetrics[m].first}, {"type", kMetrics[m].second}});
    const size_t first = static_cast<size_t>(offset.get<int64_t>());
    const size_t last = std::min(ordered.size(), first + static_cast<size_t>(limit.get<int64_t>()));
    for (size_t i = first; i < last; ++i) {
      const Sum& s = ordered[i];
      nlohmann::json dims_out = nlohmann::json::array(), values = nlohmann::json::array();
      for (const auto& k : s.keys) dims_out.push_back({{"value", k}});
      const double weight = s.sessions > 0 ? static_cast<double>(s.sessions) : 1.0;
      for (size_t m : metrics) {
        std::string v;
        if (m == 0) v = std::to_string(s.sessions);
        if (m == 1) v = fmt::format("{}", s.engagement / weight);
        if (m == 2) v = fmt::format("{}", std::round(s.revenue * 100) / 100);
        if (m == 3) v = fmt::format("{}", s.duration / weight);
        values.push_back({{"value", v}});
      }
      answer["rows"].push_back({{"dimensionValues", dims_out}, {"metricValues", values}});
    }
    if (!ordered.empty()) answer["rowCount"] = ordered.size();
    if (request.value("returnPropertyQuota", false)) answer["propertyQuota"] = quota(kTokensPerReport);
    return {200, answer};
  }

  void routes() {
    server.Post("/token", [this](const httplib::Request& req, httplib::Response& res) {
      const auto answer = account->grant(req.body);
      reply(res, answer.status, answer.body);
    });
    server.Post(R"(/v1beta/properties/([^/:]+):runReport)",
                [this](const httplib::Request& req, httplib::Response& res) {
                  if (!account->authorized(req.get_header_value("Authorization"))) {
                    reply(res, 401, GoogleOAuthAccount::unauthenticated());
                    return;
                  }
                  std::lock_guard lock(mutex);
                  const auto [status, body] = report(req.matches[1], req.body);
                  calls.push_back({req.matches[1], req.body, status});
                  reply(res, status, body);
                });
  }
};

Ga4Emulator::Ga4Emulator() : impl_(std::make_unique<Impl>()) {
  port_ = impl_->server.bind_to_any_port("127.0.0.1");
  impl_->account.emplace(impl_->dir.path(), "skippr-test", "reporter@skippr-test.iam.gserviceaccount.com",
                         endpoint() + "/token", "https://www.googleapis.com/auth/analytics.readonly");
  impl_->routes();
  thread_ = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

Ga4Emulator::~Ga4Emulator() {
  impl_->server.stop();
  if (thread_.joinable()) thread_.join();
}

const std::filesystem::path& Ga4Emulator::credentials_file() const { return impl_->account->credentials_file(); }
const std::filesystem::path& Ga4Emulator::stranger_credentials_file() const {
  return impl_->account->stranger_credentials_file();
}

void Ga4Emulator::set_today(const std::string& day) {
  std::lock_guard lock(impl_->mutex);
  impl_->today = iso_days(day).value();
  impl_->tokens_used = 0;
  impl_->reports_today = 0;
}

void Ga4Emulator::set_daily_tokens(int64_t tokens) {
  std::lock_guard lock(impl_->mutex);
  impl_->daily_tokens = tokens;
}

void Ga4Emulator::throttle_next(int reports) {
  std::lock_guard lock(impl_->mutex);
  impl_->throttled = reports;
}

std::vector<Ga4Emulator::Row> Ga4Emulator::truth(const std::string& from, const std::string& to) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->rows(iso_days(from).value(), iso_days(to).value());
}

std::vector<Ga4Emulator::Call> Ga4Emulator::calls() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->calls;
}

std::string ga4_source(const Ga4Emulator& ga4, const std::string& endpoint, const std::string& extra) {
  return fmt::format(
      "GoogleAnalytics: {{ property_id: \"{}\", credentials_file: \"{}\", endpoint: \"{}\", dimensions: [date, "
      "country, deviceCategory], metrics: [sessions, engagementRate, purchaseRevenue, averageSessionDuration]{} }}",
      Ga4Emulator::kProperty, ga4.credentials_file().string(), endpoint, extra);
}

}  // namespace skippr::test
