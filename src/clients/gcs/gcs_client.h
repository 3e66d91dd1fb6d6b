// The Cloud Storage JSON API calls skipprd makes, on clients/http with an OAuth bearer token: the write-once object
// of the object sinks (a media or resumable upload with ifGenerationMatch=0), listings, metadata and downloads pinned
// to a generation, and the bucket check.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/google/google_credentials.h"
#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

enum class GcsPutOutcome { kCreated, kAlreadyExists };

// An object as a listing or its metadata reports it. The generation names one version of its content: a replaced
// object has another, which is how the File source tells a new object under an old name from the one it read.
struct GcsObject {
  std::string name;
  uint64_t size = 0;
  std::string generation;
};

class GcsClient {
 public:
  GcsClient(std::string endpoint, GoogleServiceAccount account)
      : endpoint_(std::move(endpoint)), tokens_(std::move(account), kGcsScope) {}

  // A media upload with ifGenerationMatch=0 — kAlreadyExists (412) when an object of that name is there (landed
  // earlier: never rewritten). A retry after an unknown outcome is safe for the same reason. Errors: kConfig for
  // what waiting cannot fix (credentials, access, a missing bucket), kUnavailable before anything was sent or on
  // 5xx/429/408, kUnknownOutcome when the upload may have happened.
  Result<GcsPutOutcome> insert_object_if_absent(const std::string& bucket, const std::string& name,
                                                std::string_view body, const char* content_type);
  // The same for a large body, as a resumable upload in `chunk_bytes` chunks (a multiple of 256 KiB): an object
  // already there is kAlreadyExists without uploading. Nothing is visible until the last chunk lands; a session a
  // crash leaves is dropped by the service (after a week) and never becomes an object.
  Result<GcsPutOutcome> resumable_insert_if_absent(const std::string& bucket, const std::string& name,
                                                   std::string_view body, size_t chunk_bytes, const char* content_type);
  // Every object whose name starts with `prefix`, in name order (all pages).
  Result<std::vector<GcsObject>> list_objects(const std::string& bucket, const std::string& prefix);
  // nullopt when there is no object of that name.
  Result<std::optional<GcsObject>> get_object_metadata(const std::string& bucket, const std::string& name);
  // Writes the object's content to `file` if its generation is still `generation` (ifGenerationMatch). kBadInput
  // when the object was replaced or deleted meanwhile: the caller names it; it is never read in another version.
  Status download_object(const std::string& bucket, const std::string& name, const std::string& generation,
                         std::FILE* file);
  // kConfig when the bucket does not exist or these credentials may not use it.
  Status check_bucket(const std::string& bucket);

  const std::string& endpoint() const { return endpoint_; }

 private:
  // The answer whatever its status, sent with a bearer token (fetched again once when the service says it is no
  // longer valid). A failure without an answer keeps http_send's kind for a write and is kUnavailable for a read,
  // which has no outcome to doubt.
  Result<HttpResponse> send(HttpRequest request, const std::string& what, bool is_write);
  Error error_of(const HttpResponse& response, const std::string& what) const;
  Result<GcsPutOutcome> upload_chunks(const std::string& session, const std::string& what, std::string_view body,
                                      size_t chunk_bytes);
  std::string object_url(const std::string& bucket, const std::string& name) const;

  std::string endpoint_;
  GoogleTokenSource tokens_;
};

}  // namespace skippr
