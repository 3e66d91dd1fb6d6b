#include "formats/compression.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace skippr {

namespace {

constexpr size_t kInputChunk = 256 << 10;

class FileHandle {
 public:
  explicit FileHandle(int fd) : fd_(fd) {}
  FileHandle(const FileHandle&) = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
  }
  Result<size_t> read(char* dst, size_t n, const std::filesystem::path& path) {
    while (true) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno == EINTR) continue;
      return fail(ErrorKind::kUnavailable, fmt::format("reading {}: {}", path.string(), std::strerror(errno)));
    }
  }

 private:
  int fd_;
};

class PlainStream final : public ByteStream {
 public:
  PlainStream(int fd, std::filesystem::path path) : file_(fd), path_(std::move(path)) {}
  Result<size_t> read(char* dst, size_t n) override { return file_.read(dst, n, path_); }

 private:
  FileHandle file_;
  std::filesystem::path path_;
};

class GzipStream final : public ByteStream {
 public:
  GzipStream(int fd, std::filesystem::path path) : file_(fd), path_(std::move(path)), in_(kInputChunk) {
    std::memset(&z_, 0, sizeof z_);
    inflateInit2(&z_, 15 + 32);  // 32: accept a gzip (or zlib) header
  }
  ~GzipStream() override { inflateEnd(&z_); }

  Result<size_t> read(char* dst, size_t n) override {
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(n);
    while (z_.avail_out == n) {
      if (z_.avail_in == 0) {
        if (input_done_) break;
        auto got = file_.read(in_.data(), in_.size(), path_);
        if (!got) return std::unexpected(got.error());
        if (*got == 0) {
          input_done_ = true;
          if (any_input_ && !member_done_) return damaged("the file ends in the middle of a gzip stream (truncated?)");
          break;
        }
        any_input_ = true;
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(*got);
      }
      if (member_done_) {  // gzip allows several members one after another (cat a.gz b.gz)
        inflateReset(&z_);
        member_done_ = false;
      }
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) {
        member_done_ = true;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return damaged(z_.msg ? z_.msg : "inflate failed");
      }
    }
    return n - z_.avail_out;
  }

 private:
  std::unexpected<Error> damaged(std::string_view why) const {
    return fail(ErrorKind::kBadInput, fmt::format("{} is not a readable gzip file: {}", path_.string(), why));
  }
  FileHandle file_;
  std::filesystem::path path_;
  std::vector<char> in_;
  z_stream z_;
  bool input_done_ = false;
  bool any_input_ = false;  // an empty file is an empty stream, not a truncated one
  bool member_done_ = false;
};

class ZstdStream final : public ByteStream {
 public:
  ZstdStream(int fd, std::filesystem::path path)
      : file_(fd), path_(std::move(path)), in_(ZSTD_DStreamInSize()), dctx_(ZSTD_createDCtx()) {}
  ~ZstdStream() override { ZSTD_freeDCtx(dctx_); }

  Result<size_t> read(char* dst, size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos == 0) {
      if (input_.pos == input_.size) {
        auto got = file_.read(in_.data(), in_.size(), path_);
        if (!got) return std::unexpected(got.error());
        if (*got == 0) {
          if (last_hint_ != 0) {
            return fail(ErrorKind::kBadInput,
                        fmt::format("{} ends in the middle of a zstd frame (truncated?)", path_.string()));
          }
          break;
        }
        input_ = ZSTD_inBuffer{in_.data(), *got, 0};
      }
      const size_t hint = ZSTD_decompressStream(dctx_, &out, &input_);
      if (ZSTD_isError(hint)) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("{} is not a readable zstd file: {}", path_.string(), ZSTD_getErrorName(hint)));
      }
      last_hint_ = hint;
    }
    return out.pos;
  }

 private:
  FileHandle file_;
  std::filesystem::path path_;
  std::vector<char> in_;
  ZSTD_inBuffer input_{nullptr, 0, 0};
  ZSTD_DCtx* dctx_;
  size_t last_hint_ = 0;  // 0 = the last frame is complete
};

Result<std::string> gzip_buffer(std::string_view data) {
  z_stream z;
  std::memset(&z, 0, sizeof z);
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return fail(ErrorKind::kInternal, "deflateInit2 failed");
  }
  std::string out(deflateBound(&z, data.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return fail(ErrorKind::kInternal, "gzip compression did not finish");
  return out;
}

}  // namespace

std::optional<Compression> compression_from_string(std::string_view name) {
  if (name == "none") return Compression::kNone;
  if (name == "gzip") return Compression::kGzip;
  if (name == "zstd") return Compression::kZstd;
  return std::nullopt;
}

const char* to_string(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "none";
}

Compression compression_from_extension(const std::filesystem::path& path) {
  const auto ext = path.extension().string();
  if (ext == ".gz") return Compression::kGzip;
  if (ext == ".zst" || ext == ".zstd") return Compression::kZstd;
  return Compression::kNone;
}

const char* extension_of(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "";
    case Compression::kGzip:
      return ".gz";
    case Compression::kZstd:
      return ".zst";
  }
  return "";
}

Result<std::unique_ptr<ByteStream>> open_byte_stream(const std::filesystem::path& path, Compression compression) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return fail(ErrorKind::kUnavailable, fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  switch (compression) {
    case Compression::kGzip:
      return std::make_unique<GzipStream>(fd, path);
    case Compression::kZstd:
      return std::make_unique<ZstdStream>(fd, path);
    case Compression::kNone:
      break;
  }
  return std::make_unique<PlainStream>(fd, path);
}

Result<std::string> compress_buffer(std::string_view data, Compression compression) {
  switch (compression) {
    case Compression::kNone:
      return std::string(data);
    case Compression::kGzip:
      return gzip_buffer(data);
    case Compression::kZstd: {
      std::string out(ZSTD_compressBound(data.size()), '\0');
      const size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
      if (ZSTD_isError(n)) return fail(ErrorKind::kInternal, fmt::format("zstd: {}", ZSTD_getErrorName(n)));
      out.resize(n);
      return out;
    }
  }
  return std::string(data);
}

}  // namespace skippr
