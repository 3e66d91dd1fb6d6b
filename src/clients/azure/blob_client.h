// The Azure Blob service calls skipprd makes, on clients/http with Shared Key or SAS: the write-once blob of the
// object sinks (Put Blob, or Put Block + Put Block List, with If-None-Match: *), reads, listings and the container
// check. Errors come from the x-ms-error-code header (the <Code> of the XML body when a proxy dropped it).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/azure/azure_credentials.h"
#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

enum class BlobPutOutcome { kCreated, kAlreadyExists };

// A blob as a listing or Get Blob Properties reports it; the ETag names one version of its content.
struct BlobItem {
  std::string name;
  uint64_t size = 0;
  std::string etag;
};

class BlobClient {
 public:
  explicit BlobClient(AzureAccount account) : account_(std::move(account)) {}

  // Put Blob with If-None-Match: * — kAlreadyExists (409 BlobAlreadyExists, or 412) when a blob of that name is
  // there: landed earlier, never rewritten. Errors: kConfig for what waiting cannot fix (credentials, a missing
  // container), kUnavailable before anything was sent or on 5xx/429, kUnknownOutcome when the PUT may have happened.
  Result<BlobPutOutcome> put_blob_if_absent(const std::string& container, const std::string& name,
                                            std::string_view body, const char* content_type);
  // The same for a large body: Put Block of `block_bytes` pieces, block ids derived from the block's number (so a
  // retry restages the same ids), then Put Block List with If-None-Match: *. Nothing is visible until the list is
  // committed; a blob already there is kAlreadyExists without uploading. Uncommitted blocks a crash leaves are
  // discarded by the service (after a week) and never become a blob.
  Result<BlobPutOutcome> put_blocks_if_absent(const std::string& container, const std::string& name,
                                              std::string_view body, size_t block_bytes, const char* content_type);
  Result<bool> blob_exists(const std::string& container, const std::string& name);
  Result<std::string> get_blob(const std::string& container, const std::string& name);
  // Delete Blob; a blob already gone is ok (a retry after an unknown outcome, or a sweep of what was deleted).
  Status delete_blob(const std::string& container, const std::string& name);
  // Every committed blob whose name starts with `prefix`, in name order (all pages); with `uncommitted`, also the
  // names that hold only staged blocks (an upload that was never committed).
  Result<std::vector<std::string>> list_blobs(const std::string& container, const std::string& prefix = "",
                                              bool uncommitted = false);
  // The same with each blob's size and ETag (committed blobs only, unless `uncommitted`).
  Result<std::vector<BlobItem>> list_blob_items(const std::string& container, const std::string& prefix = "",
                                                bool uncommitted = false);
  // nullopt when there is no such blob.
  Result<std::optional<BlobItem>> blob_properties(const std::string& container, const std::string& name);
  // Writes the blob's content to `file` if its ETag is still `etag` (If-Match). kBadInput when it was replaced or
  // deleted meanwhile.
  Status download_blob(const std::string& container, const std::string& name, const std::string& etag, std::FILE* file);
  // The ids of a blob's committed blocks, in order (as azure_block_id makes them).
  Result<std::vector<std::string>> committed_blocks(const std::string& container, const std::string& name);
  // kConfig when the container does not exist or these credentials may not use it (Get Container Properties).
  Status check_container(const std::string& container);
  // Creates the container; `public_read` lets anyone read its blobs without credentials. Already there: ok.
  Status create_container(const std::string& container, bool public_read = false);

  const AzureAccount& account() const { return account_; }

 private:
  // The answer whatever its status; a failure without one keeps http_send's kind for a write (kUnknownOutcome:
  // the write may have happened) and is kUnavailable for a read, which has no outcome to doubt.
  // `body_file`: a 2xx answer's body is written there (see HttpRequest::body_file).
  Result<HttpResponse> send(const AzureRequest& request, const std::string& what, bool is_write,
                            std::FILE* body_file = nullptr) const;
  Error error_of(const HttpResponse& response, const std::string& what) const;
  std::string what(const char* operation, const std::string& container, const std::string& name = "") const;

  AzureAccount account_;
};

// The block id of block `number` (1-based), base64 of a fixed-length name: one blob's ids must all be as long.
std::string azure_block_id(int number);

}  // namespace skippr
