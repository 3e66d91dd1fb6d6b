// CSV -> rows (RFC 4180 plus the usual variants): a chosen delimiter and quote, quoted fields with doubled quotes,
// newlines inside quotes, CRLF or LF, a UTF-8 BOM. Every column is text: an unquoted field equal to the null string
// is NULL, a quoted one ("") is an empty string. A record with a different number of fields than the header, an
// unterminated quote or invalid UTF-8 becomes a dead letter.
#pragma once

#include <string>
#include <vector>

#include "core/connector.h"
#include "formats/jsonl_reader.h"
#include "formats/record_buffer.h"
#include "formats/row_builder.h"

namespace skippr {

struct CsvOptions {
  char delimiter = ',';
  char quote = '"';
  bool header = true;       // false: columns are named column_1, column_2, ...
  std::string null_string;  // an unquoted field equal to this is NULL (default: the empty field)
};

class CsvReader {
 public:
  explicit CsvReader(CsvOptions options) : options_(std::move(options)) {}

  // Reads the header (when there is one) at the start of a file; call before read() and before skipping to a
  // saved offset, which is always after the header.
  Status read_header(RecordBuffer& in, const std::string& file);
  Result<bool> read(RecordBuffer& in, RowBuilder& rows, std::vector<DeadLetter>& dead, const ReadLimits& limits,
                    ReadProgress& progress, const std::string& file);

 private:
  struct Field {
    size_t begin = 0, end = 0;  // in scratch_
    bool quoted = false;
  };
  // Splits one record into fields_ (unescaped into scratch_); returns why it is malformed, or nullopt.
  std::optional<std::string> split(std::string_view record);

  CsvOptions options_;
  std::vector<std::string> names_;
  std::vector<Field> fields_;
  std::string scratch_;
};

}  // namespace skippr
