#include "clients/azure/blob_client.h"

#include <fmt/format.h>

#include <cstdlib>

#include "clients/aws/aws_xml.h"  // libxml2 lookups; Azure's error and list bodies are plain XML as S3's are
#include "core/redact.h"

namespace skippr {
namespace {

bool is_azure_credentials_problem(const std::string& code) {
  return code == "AuthenticationFailed" || code == "AuthorizationFailure" ||
         code == "AuthorizationPermissionMismatch" || code == "AuthorizationResourceTypeMismatch" ||
         code == "AuthorizationServiceMismatch" || code == "AuthorizationProtocolMismatch" ||
         code == "AuthorizationSourceIPMismatch" || code == "InsufficientAccountPermissions" ||
         code == "AccountIsDisabled";
}

std::string blob_path(const std::string& container, const std::string& name) {
  return "/" + url_encode(container) + (name.empty() ? "" : "/" + url_encode(name, /*keep_slash=*/true));
}

std::string error_code(const HttpResponse& response) {
  if (auto h = response.headers.find("x-ms-error-code"); h != response.headers.end()) return h->second;
  return aws_xml_text(response.body, "Code");
}

bool already_exists(const HttpResponse& response) {
  // If-None-Match: * on an existing blob: the service answers 409 BlobAlreadyExists, some emulators 412.
  return response.status == 412 || (response.status == 409 && error_code(response) == "BlobAlreadyExists");
}

}  // namespace

std::string azure_block_id(int number) { return azure_base64(fmt::format("skippr{:06d}", number)); }

std::string BlobClient::what(const char* operation, const std::string& container, const std::string& name) const {
  return fmt::format("Azure {} {}/{}{}", operation, account_.name, container, name.empty() ? "" : "/" + name);
}

Result<HttpResponse> BlobClient::send(const AzureRequest& request, const std::string& what, bool is_write,
                                      std::FILE* body_file) const {
  HttpRequest http = azure_authorize(account_, request);
  http.body_file = body_file;
  if (body_file || !request.body.empty()) allow_long_transfer(http);
  auto response = http_send(http);
  if (response) return response;
  // http_send names the URL, whose query may hold the SAS: only the path is shown, and no secret in any case.
  std::string message = response.error().message;
  for (size_t at = message.find(http.url); at != std::string::npos; at = message.find(http.url, at)) {
    message.replace(at, http.url.size(), azure_public_url(account_, request));
  }
  message = redact(std::move(message), account_.secrets);
  const ErrorKind kind = !is_write && response.error().kind == ErrorKind::kUnknownOutcome ? ErrorKind::kUnavailable
                                                                                          : response.error().kind;
  return fail(kind, fmt::format("{}: {}", what, message));
}

Error BlobClient::error_of(const HttpResponse& response, const std::string& what) const {
  const std::string code = error_code(response);
  const std::string status =
      code.empty() ? fmt::format("HTTP {}", response.status) : fmt::format("HTTP {} {}", response.status, code);
  if (code == "ContainerNotFound") {
    return Error{ErrorKind::kConfig, fmt::format("{}: {} (the container does not exist at {}); create it or fix "
                                                 "container/endpoint",
                                                 what, status, account_.endpoint)};
  }
  if (response.status == 403 || is_azure_credentials_problem(code)) {
    return Error{ErrorKind::kConfig, fmt::format("{}: {}: the credentials from {} are refused or may not do this; "
                                                 "fix them or the container's access",
                                                 what, status, account_.source)};
  }
  if (response.status >= 500 || response.status == 408 || response.status == 409 || response.status == 429 ||
      code == "InvalidBlockList") {  // a block list whose blocks are gone: the whole upload is retried
    return Error{ErrorKind::kUnavailable, fmt::format("{}: {}; retried", what, status)};
  }
  return Error{ErrorKind::kConfig, fmt::format("{}: {}", what, status)};
}

Result<BlobPutOutcome> BlobClient::put_blob_if_absent(const std::string& container, const std::string& name,
                                                      std::string_view body, const char* content_type) {
  AzureRequest r;
  r.method = "PUT";
  r.path = blob_path(container, name);
  r.body = body;
  r.headers = {{"Content-Type", content_type}, {"If-None-Match", "*"}, {"x-ms-blob-type", "BlockBlob"}};
  const std::string w = what("Put Blob", container, name);
  auto response = send(r, w, /*is_write=*/true);
  if (!response) return std::unexpected(response.error());
  if (response->status == 201) return BlobPutOutcome::kCreated;
  if (already_exists(*response)) return BlobPutOutcome::kAlreadyExists;
  return std::unexpected(error_of(*response, w));
}

Result<BlobPutOutcome> BlobClient::put_blocks_if_absent(const std::string& container, const std::string& name,
                                                        std::string_view body, size_t block_bytes,
                                                        const char* content_type) {
  auto exists = blob_exists(container, name);
  if (!exists) return std::unexpected(exists.error());
  if (*exists) return BlobPutOutcome::kAlreadyExists;  // a replay: do not upload it again
  const std::string w = what("block upload of", container, name);
  std::string list = R"(<?xml version="1.0" encoding="utf-8"?><BlockList>)";
  int number = 0;
  for (size_t offset = 0; offset < body.size() || number == 0; offset += block_bytes) {
    const std::string id = azure_block_id(++number);
    AzureRequest put;
    put.method = "PUT";
    put.path = blob_path(container, name);
    put.query = {{"comp", "block"}, {"blockid", id}};
    put.body = body.substr(offset, block_bytes);
    const std::string block_what = fmt::format("{} (block {})", w, number);
    auto sent = send(put, block_what, /*is_write=*/true);
    if (!sent) return std::unexpected(sent.error());
    if (sent->status != 201) return std::unexpected(error_of(*sent, block_what));
    list += "<Latest>" + id + "</Latest>";
  }
  list += "</BlockList>";
  AzureRequest commit;
  commit.method = "PUT";
  commit.path = blob_path(container, name);
  commit.query = {{"comp", "blocklist"}};
  commit.body = list;
  commit.headers = {
      {"Content-Type", "application/xml"}, {"If-None-Match", "*"}, {"x-ms-blob-content-type", content_type}};
  auto committed = send(commit, w + " (Put Block List)", /*is_write=*/true);
  if (!committed) return std::unexpected(committed.error());
  if (committed->status == 201) return BlobPutOutcome::kCreated;
  if (already_exists(*committed)) return BlobPutOutcome::kAlreadyExists;
  return std::unexpected(error_of(*committed, w + " (Put Block List)"));
}

Result<bool> BlobClient::blob_exists(const std::string& container, const std::string& name) {
  auto properties = blob_properties(container, name);
  if (!properties) return std::unexpected(properties.error());
  return properties->has_value();
}

Result<std::string> BlobClient::get_blob(const std::string& container, const std::string& name) {
  AzureRequest r;
  r.path = blob_path(container, name);
  const std::string w = what("Get Blob", container, name);
  auto response = send(r, w, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200) return std::move(response->body);
  return std::unexpected(error_of(*response, w));
}

Status BlobClient::delete_blob(const std::string& container, const std::string& name) {
  AzureRequest r;
  r.method = "DELETE";
  r.path = blob_path(container, name);
  const std::string w = what("Delete Blob", container, name);
  auto response = send(r, w, /*is_write=*/true);
  if (!response) return std::unexpected(response.error());
  if (response->status == 202 || response->status == 404) return ok();
  return std::unexpected(error_of(*response, w));
}

Result<std::vector<std::string>> BlobClient::list_blobs(const std::string& container, const std::string& prefix,
                                                        bool uncommitted) {
  auto items = list_blob_items(container, prefix, uncommitted);
  if (!items) return std::unexpected(items.error());
  std::vector<std::string> names;
  for (auto& item : *items) names.push_back(std::move(item.name));
  return names;
}

Result<std::vector<BlobItem>> BlobClient::list_blob_items(const std::string& container, const std::string& prefix,
                                                          bool uncommitted) {
  std::vector<BlobItem> items;
  const std::string w = what("List Blobs", container);
  for (std::string marker;;) {
    AzureRequest r;
    r.path = blob_path(container, "");
    r.query = {{"restype", "container"}, {"comp", "list"}};
    if (!prefix.empty()) r.query.emplace_back("prefix", prefix);
    if (uncommitted) r.query.emplace_back("include", "uncommittedblobs");
    if (!marker.empty()) r.query.emplace_back("marker", marker);
    auto response = send(r, w, /*is_write=*/false);
    if (!response) return std::unexpected(response.error());
    if (response->status != 200) return std::unexpected(error_of(*response, w));
    for (auto& blob : aws_xml_records(response->body, "Blob")) {
      items.push_back({std::move(blob["Name"]), std::strtoull(blob["Content-Length"].c_str(), nullptr, 10),
                       quoted_etag(std::move(blob["Etag"]))});
    }
    marker = aws_xml_text(response->body, "NextMarker");
    if (marker.empty()) return items;
  }
}

Result<std::optional<BlobItem>> BlobClient::blob_properties(const std::string& container, const std::string& name) {
  AzureRequest r;
  r.method = "HEAD";
  r.path = blob_path(container, name);
  const std::string w = what("Get Blob Properties", container, name);
  auto response = send(r, w, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 404 && error_code(*response) != "ContainerNotFound") return std::optional<BlobItem>();
  if (response->status != 200) return std::unexpected(error_of(*response, w));
  return std::optional<BlobItem>(BlobItem{name, std::strtoull(response->headers["content-length"].c_str(), nullptr, 10),
                                          quoted_etag(response->headers["etag"])});
}

Status BlobClient::download_blob(const std::string& container, const std::string& name, const std::string& etag,
                                 std::FILE* file) {
  AzureRequest r;
  r.path = blob_path(container, name);
  r.headers = {{"If-Match", etag}};
  const std::string w = what("Get Blob", container, name);
  auto response = send(r, w, /*is_write=*/false, file);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200) return ok();
  if (response->status == 412 || (response->status == 404 && error_code(*response) == "BlobNotFound")) {
    return fail(ErrorKind::kBadInput,
                fmt::format("az://{}/{} was {} while it was being read (its ETag was {})", container, name,
                            response->status == 412 ? "replaced" : "deleted", etag));
  }
  return std::unexpected(error_of(*response, w));
}

Result<std::vector<std::string>> BlobClient::committed_blocks(const std::string& container, const std::string& name) {
  AzureRequest r;
  r.path = blob_path(container, name);
  r.query = {{"comp", "blocklist"}, {"blocklisttype", "committed"}};
  const std::string w = what("Get Block List", container, name);
  auto response = send(r, w, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status != 200) return std::unexpected(error_of(*response, w));
  std::vector<std::string> ids;
  for (auto& block : aws_xml_records(response->body, "Block")) ids.push_back(std::move(block["Name"]));
  return ids;
}

Status BlobClient::check_container(const std::string& container) {
  AzureRequest r;
  r.method = "HEAD";
  r.path = blob_path(container, "");
  r.query = {{"restype", "container"}};
  const std::string w = what("container", container);
  auto response = send(r, w, /*is_write=*/false);
  if (!response) return std::unexpected(response.error());
  if (response->status == 200) return ok();
  // A HEAD answer has no body; without an x-ms-error-code a 404 can only be the container.
  if (response->status == 404) response->headers.emplace("x-ms-error-code", "ContainerNotFound");
  return std::unexpected(error_of(*response, w));
}

Status BlobClient::create_container(const std::string& container, bool public_read) {
  AzureRequest r;
  r.method = "PUT";
  r.path = blob_path(container, "");
  r.query = {{"restype", "container"}};
  if (public_read) r.headers.emplace_back("x-ms-blob-public-access", "container");
  const std::string w = what("Create Container", container);
  auto response = send(r, w, /*is_write=*/true);
  if (!response) return std::unexpected(response.error());
  if (response->status == 201 || (response->status == 409 && error_code(*response) == "ContainerAlreadyExists")) {
    return ok();
  }
  return std::unexpected(error_of(*response, w));
}

}  // namespace skippr
