// One HTTP request on libcurl with a typed outcome, shared by every client that speaks HTTP (API sources, S3 and
// the other object stores, warehouses' REST APIs). Retries are the caller's: only it knows whether a request is
// idempotent and which key makes a retry safe.
#pragma once

#include <atomic>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

struct HttpResponse {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

struct HttpRequest {
  std::string method = "GET";
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string_view body;             // sent as is (not copied: it must outlive the call)
  // AWS Signature V4 through libcurl (CURLOPT_AWS_SIGV4): "aws:amz:<region>:<service>" and the key pair.
  std::string aws_sigv4 = {};
  std::string aws_key_id = {};
  std::string aws_secret = {};
  double timeout_seconds = 60;
  double connect_timeout_seconds = 10;
  // Set: a transfer that moves no byte for this long is abandoned (a long download without a whole-request limit).
  double stall_seconds = 0;
  bool follow_redirects = false;
  // Set: a 2xx answer's body is written to this file instead of HttpResponse::body (a download of any size in bounded
  // memory); other answers' bodies (errors) stay in memory.
  std::FILE* body_file = nullptr;
  const std::atomic<bool>* stop = nullptr;  // set: the transfer is abandoned within a tenth of a second
};

// The response, whatever its status. Failures without one are typed by what the server may have seen:
// kUnavailable when the request was never sent (no connection), kUnknownOutcome when it may have been acted on
// (a timeout or a connection lost after sending) — a retry then must reuse the same idempotency key.
Result<HttpResponse> http_send(const HttpRequest& request);

// A request that moves a large body (an object upload or download): bounded by progress, not by a wall clock, so a
// large body on a slow link is not cut off and retried forever.
void allow_long_transfer(HttpRequest& request);

// An entity tag as HTTP quotes it ("abc"); servers differ in whether listings quote them, comparisons must not.
std::string quoted_etag(std::string etag);

// The URL as a message may show it: without its query, which can hold credentials (a SAS, an upload session id).
std::string display_url(std::string_view url);

// The inverse of url_encode; `plus_is_space` for form-style encoding (S3's encoding-type=url listings).
std::string url_decode(std::string_view text, bool plus_is_space = false);

// RFC 3986 percent-encoding of `text`; '/' kept when `keep_slash` (an object key in a URL path).
std::string url_encode(std::string_view text, bool keep_slash = false);

}  // namespace skippr
