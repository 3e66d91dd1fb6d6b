// JSON records -> batch columns, for sources that receive JSON (HttpServer, Kafka, HttpClient): each top-level key of
// an object becomes a column (int64, double, string, bool; nested objects and arrays stay JSON text as Type::kJson).
// A key seen for the first time adds a nullable column; an int column that meets a fraction widens to double; any
// other change of type is kBadInput naming the field, so a caller can reject the whole request or message.
#pragma once

#include <simdjson.h>

#include <string>
#include <string_view>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

// Appends `object` as one row of `batch`. On error the batch may hold a partial row: callers build into a scratch
// batch and append it to their buffer only when every record parsed.
Status append_json_object(simdjson::dom::object object, Batch& batch);

// Parses `text` as one JSON object, an array of objects, or NDJSON (one object a line) into `batch`. `what` names
// the input in errors (e.g. "request body", "message 3 of topic t").
Status append_json_text(std::string_view text, std::string_view what, Batch& batch);

}  // namespace skippr
