// Which store a File source's `path` names: a local path, or a URL whose scheme picks the object store (s3://,
// az://, gs://, sftp://). One place knows the schemes and the parameters each store reads.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/connector.h"
#include "core/result.h"
#include "sources/file/file_store.h"

namespace skippr {

// The connection parameters of every store (endpoint, credentials), each documented with the scheme it serves.
std::vector<ParamSpec> file_store_params();
bool is_remote_path(const std::string& path);
// The store for `path` (a URL here; local paths use local_file_store): kConfig naming `where` for an unknown scheme
// or parameters that do not fit it. Remote objects are downloaded into `cache_dir`.
Result<std::unique_ptr<FileStore>> remote_file_store(const std::string& path, const nlohmann::json& params,
                                                     const std::filesystem::path& cache_dir, const std::string& where);

}  // namespace skippr
