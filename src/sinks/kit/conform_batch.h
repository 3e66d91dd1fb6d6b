// Values that arrive with another type than an existing column's: converted where that loses nothing, else their
// rows are rejected with a reason (the sink writes them to `<table>__skippr_rejected` in the batch's transaction).
// So a batch is never stuck in the WAL because of its content: what fits lands, what does not is kept and counted.
//
// The rule, by the column's type: an integer column takes integers, integral doubles, booleans (0/1) and strings
// that are whole decimal integers; a double column takes integers up to 2^53 (exactly representable) and numeric
// strings; a boolean column takes 0/1 and "true"/"false"; a text column takes any value as its text (numbers in their
// shortest exact form, JSON as written); a JSON column takes any value as JSON (a string becomes a JSON string).
// Anything else (a timestamp, date or binary column meeting another type) rejects the row.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"
#include "sinks/kit/schema_evolution.h"

namespace skippr {

inline constexpr std::string_view kRejectedSuffix = "__skippr_rejected";

struct RejectedRow {
  size_t row = 0;      // in the batch as it came
  std::string reason;  // which field, which value type, which column type
  std::string record;  // the row as JSON
};

struct ConformedBatch {
  Batch batch;  // the accepted rows, every field of the column's own type
  std::vector<RejectedRow> rejected;
};

// The batch type a column of `column_type` holds, as the sink's rules say (nullopt: a type the sink cannot fill
// from any batch type, e.g. DuckDB INTEGER).
std::optional<Type> column_value_type(std::string_view column_type, const ColumnRules& rules);

// nullopt when every field fits its column as it is (the common case: no copy). Otherwise the converted batch and
// the rejected rows. kConfig naming `where` when a field meets a column of a type nothing converts to.
Result<std::optional<ConformedBatch>> conform_batch(const Batch& batch, const std::vector<TableColumn>& columns,
                                                    const ColumnRules& rules, std::string_view where);

// SQL for the rejects table of `table` (qualified and quoted by the caller: `rejects`), and the INSERTs of `rows`
// for batch `batch_id`, a few hundred rows a statement.
std::string rejects_create_sql(std::string_view rejects, std::string_view text_type);
// `quote_identifier` quotes the "row" column (null: double quotes; BigQuery passes backticks). With a `condition`, each
// INSERT selects its rows WHERE the condition holds.
std::vector<std::string> rejects_insert_sql(std::string_view rejects, std::string_view batch_id,
                                            const std::vector<RejectedRow>& rows,
                                            std::string (*quote_literal)(std::string_view),
                                            std::string (*quote_identifier)(std::string_view) = nullptr,
                                            std::string_view condition = {});

}  // namespace skippr
