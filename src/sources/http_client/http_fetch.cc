#include "sources/http_client/http_fetch.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <thread>

namespace skippr {
namespace {

size_t on_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

size_t on_header(char* data, size_t size, size_t n, void* out) {
  const std::string_view line(data, size * n);
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::ranges::transform(name, name.begin(), [](unsigned char c) { return std::tolower(c); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    (*static_cast<std::map<std::string, std::string>*>(out))[name] = std::string(value);
  }
  return size * n;
}

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
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> list(nullptr, curl_slist_free_all);
  for (const auto& h : headers) list.reset(curl_slist_append(list.release(), h.c_str()));
  double backoff = 0.5;
  for (int attempt = 0;; ++attempt) {
    HttpResponse r;
    CURL* c = curl.get();
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(policy.timeout_seconds * 1000));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
    const CURLcode code = curl_easy_perform(c);
    std::string problem;
    if (code != CURLE_OK) {
      problem = curl_easy_strerror(code);
    } else {
      curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
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
