// The File source on Azure Blob: `path: az://container/in/**/*.jsonl.gz`, with the AzureBlob sink's account and
// credentials. Versions are ETags; downloads are conditional on them (If-Match).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "clients/azure/azure_credentials.h"
#include "core/result.h"
#include "sources/file/file_store.h"

namespace skippr {

Result<std::unique_ptr<FileStore>> azure_file_store(const std::string& url, AzureOptions azure,
                                                    std::filesystem::path cache_dir, std::string where);

}  // namespace skippr
