#include "formats/record_buffer.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace skippr {

RecordBuffer::RecordBuffer(std::unique_ptr<ByteStream> stream, size_t chunk_bytes)
    : stream_(std::move(stream)), buf_(chunk_bytes + simdjson::SIMDJSON_PADDING), chunk_(chunk_bytes) {}

Result<bool> RecordBuffer::fill() {
  if (eof_) return false;
  // Keep the unread tail, at the front; grow only when one record is larger than the whole buffer.
  const size_t unread = end_ - begin_;
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, unread);
    begin_ = 0;
    end_ = unread;
  }
  if (buf_.size() - simdjson::SIMDJSON_PADDING - end_ < chunk_ / 2) {
    buf_.resize(std::max(buf_.size() * 2, end_ + chunk_ + simdjson::SIMDJSON_PADDING));
  }
  auto got = stream_->read(buf_.data() + end_, buf_.size() - simdjson::SIMDJSON_PADDING - end_);
  if (!got) {
    if (got.error().kind == ErrorKind::kBadInput) damaged_at_ = offset_ + (end_ - begin_);
    return std::unexpected(got.error());
  }
  if (*got == 0) {
    eof_ = true;
    return false;
  }
  end_ += *got;
  std::memset(buf_.data() + end_, 0, simdjson::SIMDJSON_PADDING);
  return true;
}

Result<std::optional<Record>> RecordBuffer::next(char quote) {
  size_t scan = begin_;
  bool in_quotes = false;
  while (true) {
    const char* data = buf_.data();
    size_t nl = end_;
    if (quote == 0) {
      const void* hit = std::memchr(data + scan, '\n', end_ - scan);
      if (hit) nl = static_cast<const char*>(hit) - data;
    } else {
      for (size_t i = scan; i < end_; ++i) {
        const char c = data[i];
        if (c == quote) {
          in_quotes = !in_quotes;
        } else if (c == '\n' && !in_quotes) {
          nl = i;
          break;
        }
      }
    }
    if (nl < end_ || (eof_ && begin_ < end_)) {
      Record r{std::string_view(data + begin_, nl - begin_), line_};
      const size_t consumed = std::min(nl + 1, end_) - begin_;
      // Lines are counted as newlines consumed, the same way skip() counts them, so a saved (offset, line) pair
      // can be checked on resume even after a last line without a newline.
      line_ += (nl < end_ ? 1 : 0) + (quote == 0 ? 0 : std::count(r.text.begin(), r.text.end(), '\n'));
      offset_ += consumed;
      begin_ += consumed;
      return r;
    }
    const size_t scanned = end_ - begin_;  // fill() moves the data to the front: resume the scan where it stopped
    auto more = fill();
    if (!more) return std::unexpected(more.error());
    if (!*more && begin_ == end_) return std::nullopt;
    scan = begin_ + scanned;
  }
}

Status RecordBuffer::skip(uint64_t bytes) {
  while (bytes > 0) {
    if (begin_ == end_) {
      auto more = fill();
      if (!more) return std::unexpected(more.error());
      if (!*more) return fail(ErrorKind::kBadInput, "the file is shorter than the saved position");
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes, end_ - begin_));
    line_ += std::count(buf_.data() + begin_, buf_.data() + begin_ + n, '\n');
    begin_ += n;
    offset_ += n;
    bytes -= n;
  }
  return ok();
}

}  // namespace skippr
