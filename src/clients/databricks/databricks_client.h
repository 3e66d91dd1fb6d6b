// Databricks through two of its public REST APIs, with a personal access token (or any OAuth bearer token):
// - the Files API (PUT/GET/DELETE /api/2.0/fs/files{path}, GET /api/2.0/fs/directories{path}) on a Unity Catalog
//   volume, uploads with overwrite=false so a name is written once: a second upload meets 409 and is told so;
// - the SQL Statement Execution API (POST /api/2.0/sql/statements on a SQL warehouse, polled by statement_id while
//   PENDING or RUNNING). It runs one statement per request and has no idempotency key of its own: callers send only
//   statements that change nothing when run twice (COPY INTO, which loads a file once; a MERGE on order tokens; an
//   INSERT ... WHERE NOT EXISTS). A write is submitted asynchronously (wait_timeout 0s) so its answer, the statement's
//   id, comes back at once and the statement is then followed by id to its end: the window in which an answer can be
//   lost with the statement still running (the one case two runs of it could overlap) is one short request.
// Requests the service did not take (429, 503) are sent again with backoff for up to two minutes; a write answered
// 500, 502 or 504, or not answered, is an unknown outcome for the caller to resend; reads are sent again.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace skippr {

struct DatabricksConfig {
  std::string host;  // the workspace host (dbc-1234.cloud.databricks.com), or a URL
  std::string token;
  std::string warehouse_id;
  std::string catalog, schema;
  std::string endpoint;  // empty: https://<host>
  std::string where;     // "sink 'x'"
  double request_timeout_seconds = 60;
  double statement_timeout_seconds = 900;  // a statement still running after this is an unknown outcome
};

using DatabricksRows = std::vector<std::vector<std::optional<std::string>>>;  // as the API returns them: text or null

enum class UploadOutcome { kCreated, kAlreadyThere };

class DatabricksClient {
 public:
  explicit DatabricksClient(DatabricksConfig config);

  // Runs one statement; its result rows (JSON_ARRAY, every chunk). `write`: it changes data (submitted
  // asynchronously, see above). kConfig: the statement cannot run (a SQL error, no such warehouse, catalog or schema, a
  // refused token); kUnavailable: it did not apply (throttled, a concurrent Delta commit, warehouse unavailable,
  // canceled); kUnknownOutcome: it was sent and its end is not known.
  Result<DatabricksRows> execute(std::string_view sql, bool write = false);

  // Uploads `bytes` to `path` (an absolute /Volumes/... path); without `overwrite`, only if no file is there.
  Result<UploadOutcome> upload(const std::string& path, std::string_view bytes, bool overwrite = false);
  // The file's bytes; nullopt when there is none.
  Result<std::optional<std::string>> download(const std::string& path);
  // Removes the file; one that is not there is fine.
  Status remove(const std::string& path);
  // Whether `directory` (a volume's root, or a folder in one) is there (HEAD /api/2.0/fs/directories{path}).
  Result<bool> directory_exists(const std::string& directory);
  // The names (not paths) of the files directly in `directory`; none when it does not exist.
  Result<std::vector<std::string>> list_files(const std::string& directory);

  const std::string& where() const { return where_; }

 private:
  struct Reply {
    long status = 0;
    std::string body;
  };
  // One request, sent again while the service does not take it (429, 503; also 500, 502 and 504 when `repeatable`);
  // kUnavailable past two minutes of that. No answer: kUnavailable when it was not sent, else kUnknownOutcome.
  Result<Reply> send(const std::string& method, const std::string& path_and_query, std::string_view body,
                     const char* content_type, std::string_view doing, bool repeatable = true);
  // The statement's state read until it ends (or `deadline`): its status body.
  Result<std::string> poll(const std::string& statement_id, std::chrono::steady_clock::time_point deadline);
  Status refused(const Reply& reply, std::string_view doing) const;
  // The rows of a statement that ended, or why it did not succeed.
  Result<DatabricksRows> finish(const std::string& statement_id, const nlohmann::json& response);

  DatabricksConfig config_;
  std::string where_;
};

// A name as Databricks SQL quotes it: in backticks, a backtick doubled.
std::string dbx_quote_identifier(std::string_view name);
// A string literal: single quotes with backslash escapes (Spark SQL's reading of them).
std::string dbx_quote_literal(std::string_view text);
// The Files API's path in a URL: each segment percent-encoded, the slashes kept.
std::string files_api_path(std::string_view absolute_path);

}  // namespace skippr
