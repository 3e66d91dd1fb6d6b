// JSON lines -> rows: one object per line, parsed in place by simdjson. Nested objects and arrays become JSON
// columns: the line's own text of the value, minified (numbers keep their spelling). A line that is not one valid JSON
// object becomes a dead letter; blank lines are skipped.
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
  std::optional<std::string> add_object(simdjson::dom::object object, std::string_view text, RowBuilder& rows);
  // The text of the object's `index`-th field value (an object or array) in `text`, minified into nested_; the
  // fields are asked for in increasing order within a row. Empty when simdjson's on-demand reader disagrees with the
  // DOM it already validated (the caller then writes the DOM value out itself).
  std::string_view nested_text(std::string_view text, size_t index);
  // The raw text of that value in `text`, walking the on-demand reader on to it; empty on any surprise.
  std::string_view raw_value(std::string_view text, size_t index);
  struct NestedContext {
    JsonlReader* self;
    simdjson::dom::element element;
  };
  simdjson::dom::parser parser_;
  std::vector<std::string> nested_;  // minified nested values of the current row
  // Walks the current row's text in step with the DOM to find nested values' own text: writing them out from the DOM
  // (simdjson::minify of an element, numbers formatted again) took 40 % of reading a line (perf, bench/file_load.sh).
  simdjson::ondemand::parser raw_parser_;
  simdjson::ondemand::document raw_doc_;
  simdjson::ondemand::object raw_object_;
  simdjson::ondemand::object_iterator raw_field_;
  bool raw_started_ = false;
  bool raw_failed_ = false;  // this row's walk went wrong once: no more raw text for it
  size_t raw_index_ = 0;     // of the field raw_field_ is at
};

}  // namespace skippr
