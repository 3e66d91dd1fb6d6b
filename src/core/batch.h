// The columnar batch every source produces and every sink consumes. The layout follows Arrow (a validity bitmap plus
// a values buffer, or offsets + bytes for variable-length types), so sinks such as DuckDB take whole vectors
// without a loop per row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

enum class Type : uint8_t {
  kBool = 1,
  kInt64 = 2,
  kDouble = 3,
  kString = 4,
  kBinary = 5,
  kTimestamp = 6,  // microseconds since the Unix epoch, UTC
  kDate = 7,       // days since the Unix epoch
  kJson = 8,       // nested values kept as JSON text
};

const char* to_string(Type type);
std::optional<Type> type_from_string(std::string_view name);
bool is_variable_length(Type type);

struct Field {
  std::string name;
  Type type = Type::kString;
  bool operator==(const Field&) const = default;
};

struct Schema {
  std::vector<Field> fields;
  int index_of(std::string_view name) const;  // -1 when absent
  bool operator==(const Schema&) const = default;
};

// One column of a batch. Fixed-width types keep their values in `fixed` (8 bytes a row: int64, double, timestamp,
// date widened, bool as 0/1); variable-length types keep `offsets` (rows + 1 entries) into `bytes`.
// `validity` is a bitmap (bit set = value present); empty means every row is valid.
struct Column {
  Type type = Type::kString;
  std::vector<uint8_t> validity;
  std::vector<int64_t> fixed;
  std::vector<uint32_t> offsets;
  std::string bytes;

  explicit Column(Type t = Type::kString);
  size_t size() const;
  bool is_valid(size_t row) const;
  std::string_view string_at(size_t row) const;
  double double_at(size_t row) const;
  int64_t int_at(size_t row) const { return fixed[row]; }

  void append_null();
  void append_int(int64_t v);
  void append_double(double v);
  void append_bool(bool v);
  void append_string(std::string_view v);
  // Appends rows [begin, end) of `other`, which has the same type.
  void append_range(const Column& other, size_t begin, size_t end);
  size_t byte_size() const;
  void reserve(size_t rows, size_t bytes_hint = 0);

 private:
  void mark_valid_bit(size_t row, bool valid);
};

// The rows of one stream (a table, a topic, a folder: the name its source gives it), as one schema and its columns.
// A WAL commit holds one Batch per stream that had records (wal/batch_codec.h), so a kill never splits what the
// source read together. An empty `stream` is the single stream of a pipeline whose source names none: every config
// and WAL written before streams existed reads as that.
struct Batch {
  std::string stream;
  // The columns merge_by_key merges this stream on, when its source knows them per stream (each table's own primary
  // key in a many-table CDC pipeline: Source::keys_streams). Empty: the pipeline's primary_key.
  std::vector<std::string> key;
  Schema schema;
  std::vector<Column> columns;
  size_t rows = 0;

  size_t byte_size() const;
  // kInternal when the columns disagree with the schema or the row count: a bug in whoever built the batch, caught
  // before it reaches the WAL or a destination.
  Status check_shape() const;
  // Appends `other`; a field `other` has and this batch lacks becomes a new column, null for the rows before it
  // (additive evolution). A field with a different type is an error naming the field and both types.
  Status append(const Batch& other);
  // What append(other) would refuse, without changing anything: a field of another type, or another key.
  Status can_append(const Batch& other) const;
  // Adds a nullable column of `type`, null for every existing row.
  void add_column(const Field& field);
};

// The batch of just `rows` of `batch` (in that order).
Batch rows_of(const Batch& batch, const std::vector<size_t>& rows);

// Rows of every part.
size_t total_rows(const std::vector<Batch>& parts);
size_t total_bytes(const std::vector<Batch>& parts);

// A source's resume point, opaque to everyone but the source (JSON text by convention).
struct Position {
  std::string token;
  bool empty() const { return token.empty(); }
  bool operator==(const Position&) const = default;
};

// The stable identity of a batch: the same on every retry and restart. `lineage` is a random 128-bit id (32 hex
// digits) made with the pipeline's state (its first start in a DATA_DIR, and each RESET), so a new DATA_DIR, a reset
// pipeline or another pipeline never produces an id an earlier one used: a sink's "already applied?" can only match
// a real replay. Batches committed by versions before lineages have an empty one (and keep their old id).
struct BatchId {
  std::string pipeline;
  uint64_t epoch = 0;
  uint64_t seq = 0;
  std::string lineage = {};
  // "pipeline/lineage/epoch/seq", or "pipeline/epoch/seq" for a batch without a lineage.
  std::string str() const;
  bool operator==(const BatchId&) const = default;
};

}  // namespace skippr
