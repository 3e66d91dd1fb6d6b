// Who calls Azure Storage and where: an account key (Shared Key signing), a SAS token (appended to every URL) or a
// connection string holding either, resolved once into AzureAccount. Signing follows the public "Authorize with
// Shared Key" specification; nothing here ever puts a key or a SAS into a message.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "clients/http/http_request.h"
#include "core/result.h"

namespace skippr {

struct AzureOptions {
  std::string account;            // the storage account
  std::string account_key;        // base64, as the portal shows it
  std::string sas_token;          // "sv=...&sig=..." (a leading '?' is dropped)
  std::string connection_string;  // AccountName=...;AccountKey=...|SharedAccessSignature=...;BlobEndpoint=...
  // The account's blob endpoint, e.g. http://127.0.0.1:10000/devstoreaccount1. A bare IP or localhost host gets
  // "/<account>" appended (path-style, as the emulator and the SDKs address it). Empty: the connection string's, else
  // https://<account>.blob.core.windows.net.
  std::string endpoint;
};

struct AzureAccount {
  std::string name;
  std::string endpoint;  // scheme://host[:port][/path], no trailing slash: a container is endpoint + "/" + container
  std::string key;       // the decoded account key; empty with a SAS
  std::string sas;       // without '?'; empty with a key
  std::string source;    // where the credentials came from ("account_key", "sas_token", ...): for messages
  // The secrets a message must never contain (the key as given, the SAS and its signature).
  std::vector<std::string> secrets;
};

// kConfig naming `where` for no credentials, a key that is not base64, or a connection string that cannot be read
// (the string itself is never quoted).
Result<AzureAccount> resolve_azure_account(const AzureOptions& options, std::string_view where);

// One Blob service request before it is authorized: `path` is the percent-encoded path below the account's endpoint
// ("/container/blob"), `query` the raw (unencoded) parameters.
struct AzureRequest {
  std::string method = "GET";
  std::string path;
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;  // standard and x-ms-* headers, as sent
  std::string_view body;
};

// The HTTP request for `request`, authorized: x-ms-date and x-ms-version set, then either a Shared Key
// Authorization header or the SAS appended to the query.
HttpRequest azure_authorize(const AzureAccount& account, const AzureRequest& request);

// The Shared Key string-to-sign of `request` (exposed for tests against the published examples).
std::string azure_string_to_sign(const AzureAccount& account, const AzureRequest& request, const std::string& url_path);

// The URL of `request` without its query: what a message may show.
std::string azure_public_url(const AzureAccount& account, const AzureRequest& request);

std::string azure_base64(std::string_view bytes);

inline constexpr const char* kAzureStorageVersion = "2021-12-02";

}  // namespace skippr
