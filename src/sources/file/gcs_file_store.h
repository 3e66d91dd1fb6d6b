// The File source on Cloud Storage: `path: gs://bucket/in/**/*.jsonl.gz`. Objects are listed under the pattern's
// fixed prefix, matched with the same globs as local files, and downloaded one at a time into a cache file under the
// pipeline's folder (ifGenerationMatch on the generation listed, so the bytes read are exactly the version the
// position names).
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "clients/google/google_credentials.h"
#include "core/result.h"
#include "sources/file/file_store.h"

namespace skippr {

// kConfig naming `where` for a URL without a bucket or a name pattern.
Result<std::unique_ptr<FileStore>> gcs_file_store(const std::string& url, GcsOptions gcs,
                                                  std::filesystem::path cache_dir, std::string where);

}  // namespace skippr
