// The File source on SFTP: `path: sftp://[user@]host[:port]/abs/folder/**/*.jsonl.gz` (or `sftp://host/~/in/*.csv`,
// relative to the user's home), with the SFTP sink's connection parameters (user, private_key_file or password,
// known_hosts_file, ...). Files are listed under the pattern's fixed folder, matched with the same globs as local
// files, and downloaded one at a time into a cache file under the pipeline's folder.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "clients/sftp/sftp_client.h"
#include "core/result.h"
#include "sources/file/file_store.h"

namespace skippr {

bool is_sftp_url(std::string_view path);
// `options` without a host (the URL names it); a user and port in the URL must agree with `options` when both are
// given (an absent port is 22 there: give it in one place). kConfig naming `where` for a URL without a host or path.
Result<std::unique_ptr<FileStore>> sftp_file_store(const std::string& url, SftpOptions options, bool port_given,
                                                   std::filesystem::path cache_dir, std::string where);

}  // namespace skippr
