// The S3 calls skipprd makes, on clients/http with SigV4: conditional PutObject (the exactly-once-visible write of
// object sinks), GetObject, DeleteObject, bucket checks. Path-style URLs for a custom endpoint (S3-compatible
// servers), virtual-hosted ones for AWS.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/aws/aws_config.h"
#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

enum class PutOutcome { kCreated, kAlreadyExists };

// An object as a listing or HEAD reports it. The ETag names one version of its content: a replaced object has
// another, which is how the File source tells a new object under an old key from the one it read.
struct S3Object {
  std::string key;
  uint64_t size = 0;
  std::string etag;  // as S3 sends it, quotes included
};

class S3Client {
 public:
  explicit S3Client(AwsService service) : service_(std::move(service)) {}

  // PUT with If-None-Match: * — kAlreadyExists (412) when an object of that key is there (landed earlier: never
  // rewritten). Errors: kConfig for what waiting cannot fix (credentials, access, a missing bucket), kUnavailable
  // before anything was sent or on 5xx/409, kUnknownOutcome when the PUT may have happened.
  Result<PutOutcome> put_object_if_absent(const std::string& bucket, const std::string& key, std::string_view body,
                                          const char* content_type);
  // The same for a large body, as a multipart upload of `part_bytes` parts (S3's floor is 5 MiB, but the last part):
  // an object already there is kAlreadyExists without uploading; CompleteMultipartUpload carries If-None-Match, so a
  // race with another writer of the key still lands it once. An upload that fails is aborted (best effort; a bucket
  // lifecycle rule should clean what a crash leaves).
  Result<PutOutcome> put_large_object_if_absent(const std::string& bucket, const std::string& key,
                                                std::string_view body, size_t part_bytes, const char* content_type);
  // PUT that replaces what is there (a file nobody has read yet, or a pointer such as Iceberg's version hint).
  Status put_object(const std::string& bucket, const std::string& key, std::string_view body, const char* content_type);
  // true when an object of that key exists.
  Result<bool> object_exists(const std::string& bucket, const std::string& key);
  Result<std::string> get_object(const std::string& bucket, const std::string& key);
  // nullopt when there is no object of that key (deleted since it was listed, say).
  Result<std::optional<std::string>> get_object_if_exists(const std::string& bucket, const std::string& key);
  // Every object whose key starts with `prefix`, in key order (ListObjectsV2, all pages).
  Result<std::vector<S3Object>> list_objects(const std::string& bucket, const std::string& prefix);
  // nullopt when there is no object of that key.
  Result<std::optional<S3Object>> head_object(const std::string& bucket, const std::string& key);
  // Writes the object's content to `file` if its ETag is still `etag` (If-Match). kBadInput when the object was
  // replaced or deleted meanwhile: the caller names it; it is never read in its new version silently.
  Status download_object(const std::string& bucket, const std::string& key, const std::string& etag, std::FILE* file);
  // Deleting an object that is not there is not an error (a retry after an unknown outcome, a second cleaner).
  Status delete_object(const std::string& bucket, const std::string& key);
  // kConfig when the bucket does not exist or these credentials may not use it.
  Status check_bucket(const std::string& bucket);

  std::string url(const std::string& bucket, const std::string& key = "") const;

 private:
  // The request before signing: aws_send signs it with the credentials current when it is sent.
  HttpRequest request_for(std::string method, const std::string& bucket, const std::string& key, std::string_view body,
                          const std::string& query = "") const;
  Result<HttpResponse> send(const HttpRequest& request, const std::string& what);
  Result<PutOutcome> upload_parts(const std::string& bucket, const std::string& key, const std::string& upload_id,
                                  std::string_view body, size_t part_bytes);
  Error error_of(const HttpResponse& response, const std::string& what) const;

  AwsService service_;
};

// The <Code> of an S3 XML error body ("NoSuchBucket", "AccessDenied", ...), empty when there is none.
std::string s3_error_code(std::string_view body);

}  // namespace skippr
