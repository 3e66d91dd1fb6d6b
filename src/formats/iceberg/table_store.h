// Where an Iceberg table's files live: a small seam (in the manner of LevelDB's Env) with a local folder and an S3
// prefix behind it, so the table writer never knows which. Paths are relative to the table's root
// ("metadata/v3.metadata.json", "data/day=2024-05-01/x.parquet"); uri() gives the full location the metadata
// records ("file:///lake/trips/...", "s3://bucket/lake/trips/...").
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/aws/s3_client.h"
#include "core/result.h"

namespace skippr {

enum class CreateOutcome { kCreated, kAlreadyExists };

class TableStore {
 public:
  virtual ~TableStore() = default;
  virtual std::string uri(std::string_view relative) const = 0;
  // nullopt when there is no such file.
  virtual Result<std::optional<std::string>> read(const std::string& relative) = 0;
  // Writes the file whole, replacing one of that path; readers see the old or the new content, never a part.
  virtual Status write(const std::string& relative, std::string_view bytes) = 0;
  // Writes the local file `from` as `relative` (the file is consumed: moved, or read and removed); as write().
  virtual Status write_file(const std::string& relative, const std::filesystem::path& from);
  // Creates the file whole only if no file has that path: the catalog's commit (two writers racing for the next
  // version: exactly one creates it). kUnknownOutcome when it may have been created.
  virtual Result<CreateOutcome> create(const std::string& relative, std::string_view bytes) = 0;
  // Every file under `folder` ("data"), as relative paths ("data/day=2024-05-01/x.parquet"): for the sweep of files
  // no snapshot names (a folder's hidden temporaries left out).
  virtual Result<std::vector<std::string>> list(const std::string& folder) = 0;
  // Removes the file; one that is already gone is fine.
  virtual Status remove(const std::string& relative) = 0;
  // "folder /lake/trips", "s3://bucket/lake/trips": for messages.
  virtual std::string where() const = 0;
};

// A local folder: whole writes by write-to-temporary + fsync + rename, create by link(2), which fails when the
// name exists. The folder's parent must exist; the table folder is made.
Result<std::unique_ptr<TableStore>> folder_table_store(const std::filesystem::path& root);
// An S3 prefix (no leading or trailing '/'): create is PutObject with If-None-Match: *.
std::unique_ptr<TableStore> s3_table_store(S3Client client, std::string bucket, std::string prefix);

}  // namespace skippr
