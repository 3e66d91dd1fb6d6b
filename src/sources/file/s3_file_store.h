// The File source on S3: `path: s3://bucket/in/**/*.jsonl.gz`. Objects are listed under the pattern's fixed prefix,
// matched with the same globs as local files, and downloaded one at a time into a cache file under the pipeline's
// folder (If-Match on the ETag listed, so the bytes read are exactly the version the position names).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "clients/aws/aws_config.h"
#include "core/result.h"
#include "sources/file/file_store.h"

namespace skippr {

// kConfig naming `where` for a URL without a bucket.
Result<std::unique_ptr<FileStore>> s3_file_store(const std::string& url, AwsOptions aws,
                                                 std::filesystem::path cache_dir, std::string where);

}  // namespace skippr
