#include "clients/http/http_request.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <strings.h>

#include <algorithm>
#include <memory>

namespace skippr {
namespace {

struct BodySink {
  CURL* curl = nullptr;
  std::string* memory = nullptr;
  std::FILE* file = nullptr;
};

size_t on_body(char* data, size_t size, size_t n, void* out) {
  auto* sink = static_cast<BodySink*>(out);
  if (sink->file) {
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) return std::fwrite(data, 1, size * n, sink->file);  // short: curl fails
  }
  sink->memory->append(data, size * n);
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

int on_progress(void* stop, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return stop && static_cast<const std::atomic<bool>*>(stop)->load() ? 1 : 0;
}

bool never_sent(CURLcode code) {
  return code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY ||
         code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_SSL_CONNECT_ERROR;
}

}  // namespace

Result<HttpResponse> http_send(const HttpRequest& request) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return fail(ErrorKind::kInternal, "curl_easy_init failed");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> list(nullptr, curl_slist_free_all);
  bool typed = false;
  for (const auto& h : request.headers) {
    list.reset(curl_slist_append(list.release(), h.c_str()));
    typed = typed || (h.size() > 13 && strncasecmp(h.c_str(), "Content-Type:", 13) == 0);
  }
  // A body without a declared type is bytes: curl would call it a form (application/x-www-form-urlencoded), which
  // servers then parse as parameters.
  if (!request.body.empty() && !typed) {
    list.reset(curl_slist_append(list.release(), "Content-Type: application/octet-stream"));
  }
  // curl adds "Expect: 100-continue" to large bodies, which costs a round trip. An empty "Expect:" turns it off, but
  // libcurl 7.88's SigV4 would sign that header it then does not send, so signed requests keep it (answered fast).
  if (request.aws_sigv4.empty()) list.reset(curl_slist_append(list.release(), "Expect:"));
  CURL* c = curl.get();
  HttpResponse r;
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, list.get());
  if (request.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (request.method != "GET" || !request.body.empty()) {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  if (!request.body.empty() || request.method == "PUT" || request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  }
  if (!request.aws_sigv4.empty()) {
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
    curl_easy_setopt(c, CURLOPT_USERNAME, request.aws_key_id.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, request.aws_secret.c_str());
  }
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 200L);
  if (request.follow_redirects) curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  if (request.body_file) {
    // A download keeps the bytes as stored: an object saved with Content-Encoding: gzip stays gzip, and its size is
    // the one its listing gave.
    curl_easy_setopt(c, CURLOPT_HTTP_CONTENT_DECODING, 0L);
  } else {
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  }
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_seconds * 1000));
  if (request.stall_seconds > 0) {
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request.stall_seconds));
  }
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_seconds * 1000));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  BodySink body{c, &r.body, request.body_file};
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r.headers);
  if (request.stop) {
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, request.stop);
  }
  const CURLcode code = curl_easy_perform(c);
  if (code == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    return r;
  }
  const std::string what = fmt::format("{} {}: {}", request.method, display_url(request.url), curl_easy_strerror(code));
  if (never_sent(code)) return fail(ErrorKind::kUnavailable, what + " (nothing was sent)");
  return fail(ErrorKind::kUnknownOutcome, what + " (the server may have acted on it)");
}

void allow_long_transfer(HttpRequest& request) {
  request.timeout_seconds = 24 * 3600;
  request.stall_seconds = 60;
}

std::string quoted_etag(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') return etag;
  if (etag.starts_with("W/")) return etag;  // a weak tag keeps its own form
  return '"' + etag + '"';
}

std::string display_url(std::string_view url) { return std::string(url.substr(0, url.find('?'))); }

std::string url_decode(std::string_view text, bool plus_is_space) {
  std::string in(text);
  if (plus_is_space) std::ranges::replace(in, '+', ' ');
  int length = 0;
  std::unique_ptr<char, decltype(&curl_free)> out(
      curl_easy_unescape(nullptr, in.data(), static_cast<int>(in.size()), &length), curl_free);
  return out ? std::string(out.get(), static_cast<size_t>(length)) : in;
}

std::string url_encode(std::string_view text, bool keep_slash) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace skippr
