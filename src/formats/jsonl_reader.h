// JSON lines -> rows: one object per line, parsed in place by simdjson. Nested objects and arrays become JSON
// columns (minified text). A line that is not one valid JSON object becomes a dead letter; blank lines are skipped.
#pragma once

#include <simdjson.h>

#include <string>
#include <vector>

#include "core/connector.h"
#include "formats/record_buffer.h"
#include "formats/row_builder.h"

namespace skippr {

struct ReadLimits {
  size_t max_rows = 65536;
  size_t max_bytes = 10 << 20;  // of input text
};

// What one poll has read so far, across files; a reader stops once it reaches the limits.
struct ReadProgress {
  size_t rows = 0;
  size_t bytes = 0;
};

class JsonlReader {
 public:
  // Reads records until `progress` reaches a limit (false) or the file ends (true). `file` labels dead letters.
  Result<bool> read(RecordBuffer& in, RowBuilder& rows, std::vector<DeadLetter>& dead, const ReadLimits& limits,
                    ReadProgress& progress, const std::string& file);

 private:
  std::optional<std::string> add_object(simdjson::dom::object object, RowBuilder& rows);
  struct NestedContext {
    JsonlReader* self;
    simdjson::dom::element element;
  };
  simdjson::dom::parser parser_;
  std::vector<std::string> nested_;  // minified nested values of the current row
};

}  // namespace skippr
