// One batch row as one JSON object, the shape the Stdout and File sinks write (JSON lines):
// json columns are embedded as JSON values, timestamps as ISO-8601 UTC strings with microseconds
// ("2024-01-02T03:04:05.000006Z"), dates as "YYYY-MM-DD", binary as base64, NULL and non-finite doubles as null.
#pragma once

#include <string>
#include <string_view>

#include "core/batch.h"

namespace skippr {

// Appends the row's JSON object to `out` (no newline), so a caller fills one buffer for a whole batch.
void append_row_json(const Batch& batch, size_t row, std::string& out);
std::string row_to_json(const Batch& batch, size_t row);

// The batch as JSON lines in which every value is a JSON string (or null): numbers and booleans as their text,
// timestamps as above, binary as base64, json columns as their JSON text. For warehouses that load a file and convert
// each value to its column's type themselves (Databricks, Snowflake stages), so no type is guessed from the file.
// A non-empty `row_number_field` adds each row's index in the batch under that name.
std::string text_valued_json_lines(const Batch& batch, std::string_view row_number_field = {});

// Pieces the File sink and tests reuse.
void append_json_string(std::string_view text, std::string& out);  // quoted, escaped; invalid UTF-8 becomes U+FFFD
std::string base64_encode(std::string_view bytes);

}  // namespace skippr
