#include "clients/gcs/gcs_client.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>

namespace skippr {
namespace {

// The service's own words from a JSON error body ({"error": {"message": ...}}), short; empty when there are none.
std::string service_message(const std::string& body) {
  const auto json = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("error")) return "";
  const auto& error = json["error"];
  std::string message;
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    message = error["message"].get<std::string>();
  } else if (error.is_string()) {
    message = error.get<std::string>();
  }
  if (message.size() > 200) message = message.substr(0, 200) + "...";
  return message;
}

GcsObject object_of(const nlohmann::json& item) {
  GcsObject o;
  o.name = item.value("name", std::string());
  // The JSON API sends size and generation as strings (64-bit values in JSON).
  o.size = std::strtoull(item.value("size", std::string("0")).c_str(), nullptr, 10);
  o.generation = item.value("generation", std::string());
  return o;
}

}  // namespace

std::string GcsClient::object_url(const std::string& bucket, const std::string& name) const {
  // In the JSON API an object name is one path segment: its '/' are encoded too.
  return fmt::format("{}/storage/v1/b/{}/o/{}", endpoint_, url_encode(bucket), url_encode(name));
}

Result<HttpResponse> GcsClient::send(HttpRequest request, const std::string& what, bool is_write) {
  const size_t headers = request.headers.size();
  for (int attempt = 0;; ++attempt) {
    auto token = tokens_.token();
    if (!token) return fail(token.error().kind, fmt::format("{}: {}", what, token.error().message));
    request.headers.resize(headers);
    request.headers.push_back("Authorization: Bearer " + *token);
    auto response = http_send(request);
    if (!response) {
      const ErrorKind kind = !is_write && response.error().kind == ErrorKind::kUnknownOutcome ? ErrorKind::kUnavailable
                                                                                              : response.error().kind;
      return fail(kind, fmt::format("{}: {}", what, response.error().message));
    }
    // A token the service no longer takes (revoked, or expired early): fetched once more. A 401 was not acted on.
    if (response->status == 401 && attempt == 0) {
      tokens_.invalidate();
      continue;
    }
    return response;
  }
}

Error GcsClient::error_of(const HttpResponse& response, const std::string& what) const {
  const std::string said = service_message(response.body);
  const std::string status =
      said.empty() ? fmt::format("HTTP {}", response.status) : fmt::format("HTTP {} ({})", response.status, said);
  if (response.status == 404) {
    return Error{ErrorKind::kConfig, fmt::format("{}: {}: the bucket does not exist at {}; create it or fix "
                                                 "bucket/endpoint",
                                                 what, status, endpoint_)};
  }
  if (response.status == 401 || response.status == 403) {
    return Error{ErrorKind::kConfig, fmt::format("{}: {}: the credentials from {} are refused or may not do this; "
                                                 "fix them or the bucket's IAM policy",
                                                 what, status, tokens_.account().source)};
  }
  if (response.status >= 500 || response.status == 429 || response.status == 408) {
    return Error{ErrorKind::kUnavailable, fmt::format("{}: {}; retried", what, status)};
  }
  return Error{ErrorKind::kConfig, fmt::format("{}: {}", what, status)};
}

Result<GcsPutOutcome> GcsClient::insert_object_if_absent(const std::string& bucket, const std::string& name,
                                                         std::string_view body, const char* content_type) {
  HttpRequest r;
  r.method = "POST";
  r.url = fmt::format("{}/upload/storage/v1/b/{}/o?uploadType=media&name={}&ifGenerationMatch=0", endpoint_,
                      url_encode(bucket), url_encode(name));
  r.body = body;
  r.headers = {fmt::format("Content-Type: {}", content_type)};
  allow_long_transfer(r);
  const std::string what = fmt::format("GCS upload of gs://{}/{}", bucket, name);
  auto response = send(std::move(r), what, /*is_write=*/true);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200 || response->status == 201) return GcsPutOutcome::kCreated;
  if (response->status == 412) return GcsPutOutcome::kAlreadyExists;
  return std::unexpected(error_of(*response, what));
}

Result<GcsPutOutcome> GcsClient::resumable_insert_if_absent(const std::string& bucket, const std::string& name,
                                                            std::string_view body, size_t chunk_bytes,
                                                            const char* content_type) {
  auto existing = get_object_metadata(bucket, name);
  if (!existing) return std::unexpected(existing.error());
  if (*existing) return GcsPutOutcome::kAlreadyExists;  // a replay: do not upload it again
  const std::string what = fmt::format("GCS resumable upload of gs://{}/{}", bucket, name);
  HttpRequest start;
  start.method = "POST";
  start.url = fmt::format("{}/upload/storage/v1/b/{}/o?uploadType=resumable&name={}&ifGenerationMatch=0", endpoint_,
                          url_encode(bucket), url_encode(name));
  start.body = "{}";
  start.headers = {"Content-Type: application/json; charset=UTF-8",
                   fmt::format("X-Upload-Content-Type: {}", content_type),
                   fmt::format("X-Upload-Content-Length: {}", body.size())};
  // Starting a session makes nothing visible: an unknown outcome is as good as a failure.
  auto started = send(std::move(start), what + " (start)", /*is_write=*/false);
  if (!started) return std::unexpected(started.error());
  if (started->status == 412) return GcsPutOutcome::kAlreadyExists;
  if (started->status != 200 && started->status != 201) return std::unexpected(error_of(*started, what));
  const auto location = started->headers.find("location");
  if (location == started->headers.end() || location->second.empty()) {
    return fail(ErrorKind::kUnavailable, what + ": the session was started without a Location");
  }
  return upload_chunks(location->second, what, body, chunk_bytes);
}

Result<GcsPutOutcome> GcsClient::upload_chunks(const std::string& session, const std::string& what,
                                               std::string_view body, size_t chunk_bytes) {
  size_t offset = 0;
  int stuck = 0;  // answers that took nothing: the server is not making progress
  for (;;) {
    const std::string_view chunk = body.substr(offset, chunk_bytes);
    const bool last = offset + chunk.size() == body.size();
    HttpRequest put;
    put.method = "PUT";
    put.url = session;
    put.body = chunk;
    const std::string total = last ? std::to_string(body.size()) : "*";
    put.headers = {chunk.empty()
                       ? fmt::format("Content-Range: bytes */{}", total)
                       : fmt::format("Content-Range: bytes {}-{}/{}", offset, offset + chunk.size() - 1, total)};
    allow_long_transfer(put);
    // Only the last chunk can make the object visible; an earlier one lost in flight is simply sent again.
    const std::string chunk_what = fmt::format("{} (bytes {}-{})", what, offset, offset + chunk.size());
    auto sent = send(std::move(put), chunk_what, /*is_write=*/last);
    if (!sent) return std::unexpected(sent.error());
    if (sent->status == 200 || sent->status == 201) return GcsPutOutcome::kCreated;
    if (sent->status == 412) return GcsPutOutcome::kAlreadyExists;
    if (sent->status == 404 || sent->status == 410) {
      return fail(ErrorKind::kUnavailable, chunk_what + ": the upload session is gone; the upload is started again");
    }
    if (sent->status != 308) return std::unexpected(error_of(*sent, chunk_what));
    // 308 Resume Incomplete: Range says what the service holds ("bytes=0-N"); absent, it holds nothing.
    size_t held = 0;
    if (auto range = sent->headers.find("range"); range != sent->headers.end()) {
      const size_t dash = range->second.find('-');
      if (dash != std::string::npos) held = std::strtoull(range->second.c_str() + dash + 1, nullptr, 10) + 1;
    }
    if (held > body.size()) return fail(ErrorKind::kUnavailable, chunk_what + ": the service holds more than was sent");
    stuck = held > offset ? 0 : stuck + 1;
    if (stuck >= 3) return fail(ErrorKind::kUnavailable, chunk_what + ": the service takes no more of the body");
    offset = held;
  }
}

Result<std::vector<GcsObject>> GcsClient::list_objects(const std::string& bucket, const std::string& prefix) {
  std::vector<GcsObject> out;
  const std::string what = fmt::format("GCS listing of gs://{}/{}", bucket, prefix);
  std::string token;
  do {
    HttpRequest r;
    r.url = fmt::format("{}/storage/v1/b/{}/o?prefix={}", endpoint_, url_encode(bucket), url_encode(prefix));
    if (!token.empty()) r.url += "&pageToken=" + url_encode(token);
    auto response = send(std::move(r), what, /*is_write=*/false);
    if (!response) return std::unexpected(response.error());
    if (response->status != 200) return std::unexpected(error_of(*response, what));
    const auto json = nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) return fail(ErrorKind::kUnavailable, what + ": the answer is not JSON");
    if (json.contains("items") && json["items"].is_array()) {
      for (const auto& item : json["items"]) out.push_back(object_of(item));
    }
    token = json.value("nextPageToken", std::string());
  } while (!token.empty());
  return out;
}

Result<std::optional<GcsObject>> GcsClient::get_object_metadata(const std::string& bucket, const std::string& name) {
  HttpRequest r;
  r.url = object_url(bucket, name);
  const std::string what = fmt::format("GCS metadata of gs://{}/{}", bucket, name);
  auto response = send(std::move(r), what, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 404) return std::optional<GcsObject>();
  if (response->status != 200) return std::unexpected(error_of(*response, what));
  const auto json = nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) return fail(ErrorKind::kUnavailable, what + ": the answer is not JSON");
  return std::optional<GcsObject>(object_of(json));
}

Status GcsClient::download_object(const std::string& bucket, const std::string& name, const std::string& generation,
                                  std::FILE* file) {
  HttpRequest r;
  r.url = object_url(bucket, name) + "?alt=media&ifGenerationMatch=" + url_encode(generation);
  r.body_file = file;
  // The bytes as stored: without it GCS would decompress an object saved with Content-Encoding: gzip.
  r.headers.push_back("Accept-Encoding: gzip");
  allow_long_transfer(r);
  const std::string what = fmt::format("GCS download of gs://{}/{}", bucket, name);
  auto response = send(std::move(r), what, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200) return ok();
  if (response->status == 412 || response->status == 404) {
    return fail(ErrorKind::kBadInput,
                fmt::format("gs://{}/{} was {} while it was being read (its generation was {})", bucket, name,
                            response->status == 412 ? "replaced" : "deleted", generation));
  }
  return std::unexpected(error_of(*response, what));
}

Status GcsClient::check_bucket(const std::string& bucket) {
  HttpRequest r;
  r.url = fmt::format("{}/storage/v1/b/{}", endpoint_, url_encode(bucket));
  const std::string what = fmt::format("GCS bucket {}", bucket);
  auto response = send(std::move(r), what, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200) return ok();
  return std::unexpected(error_of(*response, what));
}

}  // namespace skippr
