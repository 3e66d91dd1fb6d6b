#include "formats/parquet_reader.h"

#include <duckdb.h>
#include <fmt/format.h>

#include <optional>

#include "clients/duckdb/duckdb_client.h"

namespace skippr {

namespace {

// The batch type a DuckDB column type (as DESCRIBE spells it) is read as, and the SQL that casts it there.
std::pair<Type, std::string> read_as(const std::string& duckdb_type, const std::string& column) {
  const std::string c = quote_identifier(column);
  static const char* kInts[] = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"};
  for (const char* t : kInts) {
    if (duckdb_type == t) return {Type::kInt64, c + "::BIGINT"};
  }
  if (duckdb_type == "BOOLEAN") return {Type::kBool, c};
  if (duckdb_type == "VARCHAR") return {Type::kString, c};
  if (duckdb_type == "BLOB") return {Type::kBinary, c};
  if (duckdb_type == "DATE") return {Type::kDate, c};
  if (duckdb_type.starts_with("TIMESTAMP")) return {Type::kTimestamp, c + "::TIMESTAMPTZ"};
  if (duckdb_type == "FLOAT" || duckdb_type == "DOUBLE" || duckdb_type.starts_with("DECIMAL") ||
      duckdb_type == "UBIGINT" || duckdb_type == "HUGEINT" || duckdb_type == "UHUGEINT") {
    return {Type::kDouble, c + "::DOUBLE"};
  }
  return {Type::kJson, "to_json(" + c + ")::VARCHAR"};
}

std::string_view string_at(duckdb_vector vector, idx_t row) {
  auto* strings = static_cast<duckdb_string_t*>(duckdb_vector_get_data(vector));
  return {duckdb_string_t_data(&strings[row]), duckdb_string_t_length(strings[row])};
}

}  // namespace

struct ParquetReader::Impl {
  std::optional<DuckDbDatabase> db;
  std::optional<DuckDbConnection> conn;
  std::vector<std::string> names;
  std::vector<Type> types;
  duckdb_prepared_statement prepared = nullptr;
  duckdb_pending_result pending = nullptr;
  duckdb_result result{};
  bool has_result = false;
  duckdb_data_chunk chunk = nullptr;  // the chunk being consumed
  idx_t chunk_row = 0;
  bool done = false;

  ~Impl() {
    if (chunk) duckdb_destroy_data_chunk(&chunk);
    if (has_result) duckdb_destroy_result(&result);
    if (pending) duckdb_destroy_pending(&pending);
    if (prepared) duckdb_destroy_prepare(&prepared);
  }
};

ParquetReader::ParquetReader(std::unique_ptr<Impl> impl, uint64_t first_row)
    : impl_(std::move(impl)), next_row_(first_row) {}
ParquetReader::~ParquetReader() = default;

Result<std::unique_ptr<ParquetReader>> ParquetReader::open(const std::filesystem::path& path, uint64_t first_row) {
  auto impl = std::make_unique<Impl>();
  auto where = [&](const Error& e) {
    return fail(ErrorKind::kBadInput, fmt::format("{} cannot be read as Parquet: {}", path.string(), e.message));
  };
  auto db = DuckDbDatabase::open(":memory:");
  if (!db) return where(db.error());
  impl->db.emplace(std::move(*db));
  auto conn = DuckDbConnection::connect(*impl->db);
  if (!conn) return where(conn.error());
  impl->conn.emplace(std::move(*conn));
  const std::string file = quote_literal(path.string());
  auto described = impl->conn->query(fmt::format("DESCRIBE SELECT * FROM read_parquet({})", file));
  if (!described) return where(described.error());
  std::string select;
  for (const auto& row : described->rows) {
    auto [type, expression] = read_as(row[1].value_or(""), row[0].value_or(""));
    impl->names.push_back(row[0].value_or(""));
    impl->types.push_back(type);
    select += (select.empty() ? "" : ", ") + expression;
  }
  if (select.empty()) select = "NULL";
  // file_row_number keeps the position exact whatever the row groups are; insertion order is preserved.
  const std::string sql = fmt::format(
      "SELECT {} FROM read_parquet({}, file_row_number = true) WHERE file_row_number >= {}", select, file, first_row);
  if (duckdb_prepare(impl->conn->handle(), sql.c_str(), &impl->prepared) != DuckDBSuccess) {
    const char* error = duckdb_prepare_error(impl->prepared);
    return where(Error{ErrorKind::kBadInput, error ? error : "cannot prepare the query"});
  }
  if (duckdb_pending_prepared_streaming(impl->prepared, &impl->pending) != DuckDBSuccess) {
    const char* error = duckdb_pending_error(impl->pending);
    return where(Error{ErrorKind::kBadInput, error ? error : "cannot start the query"});
  }
  if (duckdb_execute_pending(impl->pending, &impl->result) != DuckDBSuccess) {
    const char* error = duckdb_result_error(&impl->result);
    std::string message = error ? error : "the query failed";
    duckdb_destroy_result(&impl->result);
    return where(Error{ErrorKind::kBadInput, message});
  }
  impl->has_result = true;
  return std::unique_ptr<ParquetReader>(new ParquetReader(std::move(impl), first_row));
}

Result<bool> ParquetReader::read(RowBuilder& rows, const ReadLimits& limits, ReadProgress& progress) {
  Impl& s = *impl_;
  if (s.names.empty()) return true;
  while (progress.rows < limits.max_rows && progress.bytes < limits.max_bytes) {
    if (!s.chunk || s.chunk_row >= duckdb_data_chunk_get_size(s.chunk)) {
      if (s.chunk) duckdb_destroy_data_chunk(&s.chunk);
      s.chunk = duckdb_fetch_chunk(s.result);
      s.chunk_row = 0;
      if (!s.chunk) {
        if (const char* error = duckdb_result_error(&s.result)) {
          return fail(ErrorKind::kBadInput, fmt::format("reading Parquet: {}", error));
        }
        return true;
      }
      if (duckdb_data_chunk_get_size(s.chunk) == 0) continue;
    }
    const idx_t r = s.chunk_row++;
    rows.begin_row();
    size_t bytes = 0;
    for (size_t c = 0; c < s.names.size(); ++c) {
      duckdb_vector vector = duckdb_data_chunk_get_vector(s.chunk, c);
      uint64_t* validity = duckdb_vector_get_validity(vector);
      FieldValue v;
      v.type = s.types[c];
      if (validity && !duckdb_validity_row_is_valid(validity, r)) continue;
      void* data = duckdb_vector_get_data(vector);
      switch (v.type) {
        case Type::kInt64:
        case Type::kTimestamp:
          v.i = static_cast<int64_t*>(data)[r];
          break;
        case Type::kDate:
          v.i = static_cast<int32_t*>(data)[r];
          break;
        case Type::kBool:
          v.i = static_cast<bool*>(data)[r] ? 1 : 0;
          break;
        case Type::kDouble:
          v.d = static_cast<double*>(data)[r];
          break;
        default:
          v.s = string_at(vector, r);
          break;
      }
      bytes += v.type == Type::kString || v.type == Type::kBinary || v.type == Type::kJson ? v.s.size() : 8;
      if (auto why = rows.set(s.names[c], v)) {
        return fail(ErrorKind::kBadInput, fmt::format("Parquet row {}: {}", next_row_, *why));
      }
    }
    rows.end_row();
    ++next_row_;
    ++progress.rows;
    progress.bytes += bytes;
  }
  return false;
}

}  // namespace skippr
