// Splits a ByteStream into records without copying them: a line (JSONL) or a CSV record, whose newlines inside
// quotes do not end it. A returned view stays valid until the next call. The buffer always keeps
// simdjson::SIMDJSON_PADDING spare bytes after the data, so simdjson parses a record in place.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "formats/compression.h"

namespace skippr {

struct Record {
  std::string_view text;  // without the record's newline (a trailing '\r' is kept; the caller decides)
  uint64_t line = 0;      // 1-based line number where it starts
};

class RecordBuffer {
 public:
  explicit RecordBuffer(std::unique_ptr<ByteStream> stream, size_t chunk_bytes = 1 << 20);

  // The next record, or nullopt at the end. `quote` != 0: newlines between two `quote` chars do not end a record.
  Result<std::optional<Record>> next(char quote = 0);
  // Skips `bytes` decompressed bytes from the current point (resume mid-file); counts their newlines as lines.
  Status skip(uint64_t bytes);

  uint64_t offset() const { return offset_; }   // decompressed bytes consumed so far
  uint64_t next_line() const { return line_; }  // the line number of the next record
  void set_next_line(uint64_t line) { line_ = line; }
  // Set once the stream could not deliver more bytes because its data is damaged or cut short (kBadInput from the
  // decompressor): the decompressed offset where the readable part ends. Everything before the last complete
  // record was returned; unread_tail() is what came after it.
  std::optional<uint64_t> damaged_at() const { return damaged_at_; }
  std::string_view unread_tail() const { return {buf_.data() + begin_, end_ - begin_}; }

 private:
  Result<bool> fill();  // false at the end of the stream
  std::unique_ptr<ByteStream> stream_;
  std::vector<char> buf_;
  size_t chunk_;
  size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  uint64_t offset_ = 0;
  uint64_t line_ = 1;
  std::optional<uint64_t> damaged_at_;
};

}  // namespace skippr
