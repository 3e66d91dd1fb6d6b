// Compressed files in and out: gzip (zlib) and zstd as streams, so a file of any size is read with a fixed buffer.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

enum class Compression { kNone, kGzip, kZstd };

// "none", "gzip", "zstd"; "auto" is resolved per file by compression_from_extension.
std::optional<Compression> compression_from_string(std::string_view name);
const char* to_string(Compression c);
// .gz -> gzip, .zst/.zstd -> zstd, anything else -> none.
Compression compression_from_extension(const std::filesystem::path& path);
// The extension a written file gets: "", ".gz", ".zst".
const char* extension_of(Compression c);

// The decompressed bytes of a file, read front to back.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Up to `n` bytes into `dst`; 0 at the end. A damaged stream is kBadInput naming the file.
  virtual Result<size_t> read(char* dst, size_t n) = 0;
};

// Opens `path` for reading through the decompressor for `compression`.
Result<std::unique_ptr<ByteStream>> open_byte_stream(const std::filesystem::path& path, Compression compression);

// Compresses a whole buffer (the File sink writes one file per batch). kNone returns a copy.
Result<std::string> compress_buffer(std::string_view data, Compression compression);

}  // namespace skippr
