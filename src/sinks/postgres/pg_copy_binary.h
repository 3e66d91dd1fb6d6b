// PostgreSQL's binary COPY format (https://www.postgresql.org/docs/15/sql-copy.html#id-1.9.3.55.9.4): a header,
// then per row a field count and per field a length (-1 = NULL) plus the value in the type's binary send format,
// then a -1 trailer. Binary avoids the text escaping and parsing both sides would otherwise do per value.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "core/batch.h"

namespace skippr {

class PgCopyBinaryWriter {
 public:
  // `with_row_index`: each row gets one more bigint field, its index in the batch (the merge's order within a batch).
  explicit PgCopyBinaryWriter(bool with_row_index = false);
  // Appends rows [begin, end) of `batch` (the staging table's columns are the batch's fields, in order).
  void append_rows(const Batch& batch, size_t begin, size_t end);
  void append_trailer();
  std::string& buffer() { return buffer_; }

 private:
  void put_u16(uint16_t v);
  void put_u32(uint32_t v);
  void put_u64(uint64_t v);
  bool with_row_index_;
  std::string buffer_;
};

}  // namespace skippr
