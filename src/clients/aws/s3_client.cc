#include "clients/aws/s3_client.h"

#include "clients/aws/aws_request.h"
#include "clients/aws/aws_xml.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

namespace skippr {
namespace {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

bool is_s3_credentials_problem(const std::string& code) {
  return code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" ||
         code == "InvalidToken" || code == "ExpiredToken" || code == "AllAccessDisabled";
}

}  // namespace

std::string s3_error_code(std::string_view body) { return aws_xml_text(body, "Code"); }

std::string S3Client::url(const std::string& bucket, const std::string& key) const {
  const std::string path = key.empty() ? "" : "/" + url_encode(key, /*keep_slash=*/true);
  if (service_.custom_endpoint) return fmt::format("{}/{}{}", service_.endpoint, bucket, path);
  const size_t scheme = service_.endpoint.find("://") + 3;
  return fmt::format("{}{}.{}{}", service_.endpoint.substr(0, scheme), bucket, service_.endpoint.substr(scheme),
                     path.empty() ? "/" : path);
}

HttpRequest S3Client::request_for(std::string method, const std::string& bucket, const std::string& key,
                                  std::string_view body, const std::string& query) const {
  HttpRequest r;
  r.method = std::move(method);
  r.url = url(bucket, key) + (query.empty() ? "" : "?" + query);
  r.body = body;
  r.headers.push_back("x-amz-content-sha256: " + sha256_hex(body));  // S3 wants it on every SigV4 request
  if (!body.empty()) allow_long_transfer(r);
  return r;
}

Error S3Client::error_of(const HttpResponse& response, const std::string& what) const {
  const std::string code = s3_error_code(response.body);
  const std::string status =
      code.empty() ? fmt::format("HTTP {}", response.status) : fmt::format("HTTP {} {}", response.status, code);
  if (response.status == 404 && (code == "NoSuchBucket" || code.empty())) {
    return Error{ErrorKind::kConfig, fmt::format("{}: {} (the bucket does not exist at {}); create it or fix "
                                                 "bucket/endpoint",
                                                 what, status, service_.endpoint)};
  }
  if (auto expired = aws_expired_after_renewal(service_, code, what, status)) return *expired;
  if (response.status == 403 || is_s3_credentials_problem(code)) {
    // Without s3:ListBucket, S3 answers 403 AccessDenied, not 404, for a key that does not exist: skipprd looks
    // for keys that may be absent (what landed, the WAL's next object), so it needs that permission.
    const bool denied = code == "AccessDenied" || code.empty();
    return Error{ErrorKind::kConfig,
                 fmt::format("{}: {}: the credentials from {} are refused or may not do this; fix them or the "
                             "bucket's policy{}",
                             what, status, service_.credentials.source,
                             denied ? " (skipprd needs s3:ListBucket on the bucket besides s3:GetObject, s3:PutObject "
                                      "and s3:DeleteObject: without it, S3 answers 403 for a key that does not exist)"
                                    : "")};
  }
  if (response.status == 501) {
    return Error{ErrorKind::kConfig, fmt::format("{}: {}: the server at {} does not implement this request (skipprd's "
                                                 "writes need conditional PUTs, If-None-Match); use S3 or a "
                                                 "compatible server that supports them",
                                                 what, status, service_.endpoint)};
  }
  if (response.status >= 500 || response.status == 409 || response.status == 429 || code == "RequestTimeout" ||
      code == "SlowDown") {
    return Error{ErrorKind::kUnavailable, fmt::format("{}: {}; retried", what, status)};
  }
  return Error{ErrorKind::kConfig, fmt::format("{}: {}", what, status)};
}

Status S3Client::put_object(const std::string& bucket, const std::string& key, std::string_view body,
                            const char* content_type) {
  HttpRequest r = request_for("PUT", bucket, key, body);
  r.headers.push_back(fmt::format("Content-Type: {}", content_type));
  auto response = send(r, fmt::format("S3 PutObject s3://{}/{}", bucket, key));
  if (!response) return std::unexpected(response.error());
  return ok();
}

Result<PutOutcome> S3Client::put_object_if_absent(const std::string& bucket, const std::string& key,
                                                  std::string_view body, const char* content_type) {
  HttpRequest r = request_for("PUT", bucket, key, body);
  r.headers.push_back("If-None-Match: *");
  r.headers.push_back(fmt::format("Content-Type: {}", content_type));
  auto response = aws_send(service_, "s3", r);
  const std::string what = fmt::format("S3 PutObject s3://{}/{}", bucket, key);
  if (!response) return fail(response.error().kind, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 200) return PutOutcome::kCreated;
  if (response->status == 412) return PutOutcome::kAlreadyExists;
  return std::unexpected(error_of(*response, what));
}

Result<HttpResponse> S3Client::send(const HttpRequest& request, const std::string& what) {
  auto response = aws_send(service_, "s3", request);
  if (!response) return fail(response.error().kind, fmt::format("{}: {}", what, response.error().message));
  // CompleteMultipartUpload may answer 200 with an error inside.
  if (response->status == 200 && s3_error_code(response->body).empty()) return response;
  if (response->status == 200) response->status = 500;
  return std::unexpected(error_of(*response, what));
}

Result<bool> S3Client::object_exists(const std::string& bucket, const std::string& key) {
  auto response = aws_send(service_, "s3", request_for("HEAD", bucket, key, ""));
  const std::string what = fmt::format("S3 HeadObject s3://{}/{}", bucket, key);
  if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 200) return true;
  if (response->status == 404) return false;
  return std::unexpected(error_of(*response, what));
}

Result<PutOutcome> S3Client::put_large_object_if_absent(const std::string& bucket, const std::string& key,
                                                        std::string_view body, size_t part_bytes,
                                                        const char* content_type) {
  auto exists = object_exists(bucket, key);
  if (!exists) return std::unexpected(exists.error());
  if (*exists) return PutOutcome::kAlreadyExists;  // a replay: do not upload it again
  const std::string what = fmt::format("S3 multipart upload of s3://{}/{}", bucket, key);
  HttpRequest create = request_for("POST", bucket, key, "", "uploads=");
  create.headers.push_back(fmt::format("Content-Type: {}", content_type));
  auto created = send(create, what);
  if (!created) return std::unexpected(created.error());
  const std::string upload_id = aws_xml_text(created->body, "UploadId");
  if (upload_id.empty()) return fail(ErrorKind::kUnavailable, what + ": no UploadId in the answer");
  auto outcome = upload_parts(bucket, key, upload_id, body, part_bytes);
  if (!outcome || *outcome == PutOutcome::kAlreadyExists) {
    (void)aws_send(service_, "s3", request_for("DELETE", bucket, key, "", "uploadId=" + url_encode(upload_id)));
  }
  return outcome;
}

Result<PutOutcome> S3Client::upload_parts(const std::string& bucket, const std::string& key,
                                          const std::string& upload_id, std::string_view body, size_t part_bytes) {
  const std::string what = fmt::format("S3 multipart upload of s3://{}/{}", bucket, key);
  std::string complete = "<CompleteMultipartUpload>";
  int number = 0;
  for (size_t offset = 0; offset < body.size() || number == 0; offset += part_bytes) {
    ++number;
    const std::string_view part = body.substr(offset, part_bytes);
    auto sent = send(
        request_for("PUT", bucket, key, part, fmt::format("partNumber={}&uploadId={}", number, url_encode(upload_id))),
        fmt::format("{} (part {})", what, number));
    if (!sent) return std::unexpected(sent.error());
    auto etag = sent->headers.find("etag");
    if (etag == sent->headers.end()) return fail(ErrorKind::kUnavailable, what + ": a part came back without an ETag");
    complete += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", number, etag->second);
  }
  complete += "</CompleteMultipartUpload>";
  HttpRequest finish = request_for("POST", bucket, key, complete, "uploadId=" + url_encode(upload_id));
  finish.headers.push_back("Content-Type: application/xml");
  finish.headers.push_back("If-None-Match: *");
  auto finished = aws_send(service_, "s3", finish);
  if (!finished) return fail(finished.error().kind, fmt::format("{}: {}", what, finished.error().message));
  if (finished->status == 412) return PutOutcome::kAlreadyExists;
  if (finished->status == 200 && s3_error_code(finished->body).empty()) return PutOutcome::kCreated;
  if (finished->status == 200) finished->status = 500;
  return std::unexpected(error_of(*finished, what));
}

Result<std::vector<S3Object>> S3Client::list_objects(const std::string& bucket, const std::string& prefix) {
  std::vector<S3Object> out;
  std::string token;
  do {
    // encoding-type=url: a key may hold characters XML 1.0 cannot carry; S3 then sends every key URL-encoded.
    std::string query = "encoding-type=url&list-type=2&prefix=" + url_encode(prefix);
    if (!token.empty()) query += "&continuation-token=" + url_encode(token);
    const std::string what = fmt::format("S3 ListObjectsV2 s3://{}/{}", bucket, prefix);
    auto response = aws_send(service_, "s3", request_for("GET", bucket, "", "", query));
    if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
    if (response->status != 200) return std::unexpected(error_of(*response, what));
    if (!aws_xml_is_document(response->body)) {
      return fail(ErrorKind::kUnavailable, what + ": the answer is not a whole XML listing; retried");
    }
    for (auto& record : aws_xml_records(response->body, "Contents")) {
      S3Object object{url_decode(record["Key"], /*plus_is_space=*/true), 0, quoted_etag(std::move(record["ETag"]))};
      object.size = std::strtoull(record["Size"].c_str(), nullptr, 10);
      out.push_back(std::move(object));
    }
    const bool truncated = aws_xml_text(response->body, "IsTruncated") == "true";
    token = truncated ? aws_xml_text(response->body, "NextContinuationToken") : "";
    if (truncated && token.empty()) {
      return fail(ErrorKind::kUnavailable, what + ": a truncated listing without a continuation token; retried");
    }
  } while (!token.empty());
  return out;
}

Result<std::optional<S3Object>> S3Client::head_object(const std::string& bucket, const std::string& key) {
  auto response = aws_send(service_, "s3", request_for("HEAD", bucket, key, ""));
  const std::string what = fmt::format("S3 HeadObject s3://{}/{}", bucket, key);
  if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 404) return std::optional<S3Object>();
  if (response->status != 200) return std::unexpected(error_of(*response, what));
  S3Object object{key, 0, quoted_etag(response->headers["etag"])};
  object.size = std::strtoull(response->headers["content-length"].c_str(), nullptr, 10);
  return std::optional<S3Object>(std::move(object));
}

Status S3Client::download_object(const std::string& bucket, const std::string& key, const std::string& etag,
                                 std::FILE* file) {
  HttpRequest r = request_for("GET", bucket, key, "");
  r.headers.push_back("If-Match: " + etag);
  r.body_file = file;
  allow_long_transfer(r);
  auto response = aws_send(service_, "s3", r);
  const std::string what = fmt::format("S3 GetObject s3://{}/{}", bucket, key);
  if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 200) return ok();
  if (response->status == 412 || (response->status == 404 && s3_error_code(response->body) == "NoSuchKey")) {
    return fail(ErrorKind::kBadInput, fmt::format("s3://{}/{} was {} while it was being read (its ETag was {})", bucket,
                                                  key, response->status == 412 ? "replaced" : "deleted", etag));
  }
  return std::unexpected(error_of(*response, what));
}

Result<std::string> S3Client::get_object(const std::string& bucket, const std::string& key) {
  auto body = get_object_if_exists(bucket, key);
  if (!body) return std::unexpected(body.error());
  if (!*body) return fail(ErrorKind::kConfig, fmt::format("S3 GetObject s3://{}/{}: HTTP 404 NoSuchKey", bucket, key));
  return std::move(**body);
}

Result<std::optional<std::string>> S3Client::get_object_if_exists(const std::string& bucket, const std::string& key) {
  auto response = aws_send(service_, "s3", request_for("GET", bucket, key, ""));
  const std::string what = fmt::format("S3 GetObject s3://{}/{}", bucket, key);
  if (!response) {
    const ErrorKind kind =
        response.error().kind == ErrorKind::kUnknownOutcome ? ErrorKind::kUnavailable : response.error().kind;
    return fail(kind, fmt::format("{}: {}", what, response.error().message));  // a read has no outcome to doubt
  }
  if (response->status == 200) return std::optional<std::string>(std::move(response->body));
  if (response->status == 404 && s3_error_code(response->body) == "NoSuchKey") return std::optional<std::string>();
  return std::unexpected(error_of(*response, what));
}

Status S3Client::delete_object(const std::string& bucket, const std::string& key) {
  auto response = aws_send(service_, "s3", request_for("DELETE", bucket, key, ""));
  const std::string what = fmt::format("S3 DeleteObject s3://{}/{}", bucket, key);
  if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 204 || response->status == 200 || response->status == 404) return ok();
  return std::unexpected(error_of(*response, what));
}

Status S3Client::check_bucket(const std::string& bucket) {
  auto response = aws_send(service_, "s3", request_for("HEAD", bucket, "", ""));
  const std::string what = fmt::format("S3 bucket {}", bucket);
  if (!response) return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", what, response.error().message));
  if (response->status == 200) return ok();
  return std::unexpected(error_of(*response, what));
}

}  // namespace skippr
