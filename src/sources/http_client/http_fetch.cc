#include "sources/http_client/http_fetch.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace skippr {
namespace {

// Retry-After in seconds (the HTTP-date form is rare for APIs and falls back to the backoff).
double retry_after_seconds(const HttpResponse& r, double fallback) {
  auto it = r.headers.find("retry-after");
  if (it == r.headers.end()) return fallback;
  try {
    return std::max(0.0, std::stod(it->second));
  } catch (...) {
    return fallback;
  }
}

}  // namespace

Result<HttpResponse> http_fetch(const std::string& method, const std::string& url,
                                const std::vector<std::string>& headers, const FetchPolicy& policy) {
  HttpRequest request;
  request.method = method;
  request.url = url;
  request.headers = headers;
  request.timeout_seconds = policy.timeout_seconds;
  request.follow_redirects = true;
  double backoff = 0.5;
  for (int attempt = 0;; ++attempt) {
    auto sent = http_send(request);
    std::string problem;
    HttpResponse r;
    if (!sent) {
      problem = sent.error().message;
    } else {
      r = std::move(*sent);
      if (r.status < 400) return r;
      if (r.status != 429 && r.status < 500) {
        return fail(ErrorKind::kConfig, fmt::format("{} {} answered {}: {}; check the url, auth and headers", method,
                                                    url, r.status, r.body.substr(0, 300)));
      }
      problem = fmt::format("HTTP {}", r.status);
    }
    if (attempt >= policy.retries) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("{} {} failed after {} attempts ({}); retry later", method, url, attempt + 1, problem));
    }
    const double wait = std::min(policy.max_backoff_seconds, retry_after_seconds(r, backoff));
    spdlog::warn("{} {}: {}, retrying in {:.1f}s", method, url, problem, wait);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
    backoff = std::min(policy.max_backoff_seconds, backoff * 2);
  }
}

std::string link_header_next(const std::string& link) {
  // Comma-separated entries `<url>; param; param`; URLs cannot contain a raw '>'.
  size_t pos = 0;
  while ((pos = link.find('<', pos)) != std::string::npos) {
    const size_t end = link.find('>', pos);
    if (end == std::string::npos) break;
    const size_t next_entry = link.find('<', end);
    const std::string params =
        link.substr(end + 1, next_entry == std::string::npos ? std::string::npos : next_entry - end - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos) {
      return link.substr(pos + 1, end - pos - 1);
    }
    pos = end;
  }
  return "";
}

std::optional<std::string> resolve_url(const std::string& base, const std::string& reference) {
  CURLU* u = curl_url();
  std::optional<std::string> out;
  char* text = nullptr;
  if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, reference.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_URL, &text, 0) == CURLUE_OK) {
    out = text;
  }
  curl_free(text);
  curl_url_cleanup(u);
  return out;
}

}  // namespace skippr
