#include "engine/dead_letters.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/env.h"
#include "core/time_util.h"
#include "formats/json_rows.h"

namespace skippr {

namespace {

// Whether a line was written for a batch the WAL never committed (or was cut short by a kill).
bool belongs_to_uncommitted_batch(std::string_view line, bool complete, uint64_t epoch, uint64_t last_committed_seq) {
  if (!complete) return true;
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return false;  // not ours to judge: keep it
  return j.value("epoch", uint64_t{0}) == epoch && j.value("seq", uint64_t{0}) > last_committed_seq;
}

}  // namespace

Result<DeadLetterFile> DeadLetterFile::open(const std::filesystem::path& path, uint64_t epoch,
                                            uint64_t last_committed_seq, uint64_t* dropped) {
  uint64_t dropped_lines = 0;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto text = default_env().read_file(path);
    if (!text) return std::unexpected(text.error());
    std::string kept;
    kept.reserve(text->size());
    size_t begin = 0;
    while (begin < text->size()) {
      const size_t nl = text->find('\n', begin);
      const bool complete = nl != std::string::npos;
      const size_t end = complete ? nl : text->size();
      const std::string_view line(text->data() + begin, end - begin);
      if (belongs_to_uncommitted_batch(line, complete, epoch, last_committed_seq)) {
        ++dropped_lines;
      } else {
        kept.append(line);
        kept.push_back('\n');
      }
      begin = end + 1;
    }
    if (dropped_lines > 0) SKIPPR_TRY(write_file_atomically(default_env(), path, kept));
  }
  if (dropped) *dropped = dropped_lines;
  return DeadLetterFile(path, epoch);
}

Status DeadLetterFile::append(uint64_t seq, const std::vector<DeadLetter>& letters) {
  if (letters.empty()) return ok();
  if (fd_ < 0) {
    const bool existed = std::filesystem::exists(path_);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("cannot open the dead-letter file {}: {}", path_.string(), std::strerror(errno)));
    }
    if (!existed) SKIPPR_TRY(default_env().fsync_dir(path_.parent_path()));
  }
  std::string out;
  const std::string at = format_iso8601_micros(now_micros());
  for (const auto& letter : letters) {
    fmt::format_to(std::back_inserter(out), R"({{"epoch":{},"seq":{},)", epoch_, seq);
    if (!letter.stream.empty()) {
      out += R"("stream":)";
      append_json_string(letter.stream, out);
      out.push_back(',');
    }
    out += R"("file":)";
    append_json_string(letter.file, out);
    fmt::format_to(std::back_inserter(out), R"(,"line":{},"reason":)", letter.line);
    append_json_string(letter.reason, out);
    out += R"(,"raw":)";
    append_json_string(letter.raw, out);
    fmt::format_to(std::back_inserter(out), R"(,"at":"{}"}})", at);
    out.push_back('\n');
  }
  for (size_t written = 0; written < out.size();) {
    const ssize_t n = ::write(fd_, out.data() + written, out.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return fail(errno == ENOSPC ? ErrorKind::kDiskFull : ErrorKind::kUnavailable,
                  fmt::format("writing the dead-letter file {}: {}", path_.string(), std::strerror(errno)));
    }
    written += static_cast<size_t>(n);
  }
  if (::fdatasync(fd_) != 0) {
    return fail(ErrorKind::kFatalIo,
                fmt::format("fdatasync of the dead-letter file {} failed: {}", path_.string(), std::strerror(errno)));
  }
  return ok();
}

DeadLetterFile::DeadLetterFile(DeadLetterFile&& other) noexcept
    : path_(std::move(other.path_)), epoch_(other.epoch_), fd_(other.fd_) {
  other.fd_ = -1;
}

DeadLetterFile::~DeadLetterFile() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace skippr
