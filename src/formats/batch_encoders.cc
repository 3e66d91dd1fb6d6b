#include "formats/batch_encoders.h"

#include <fmt/format.h>

#include <algorithm>

#include "clients/duckdb/duckdb_vectors.h"
#include "core/time_util.h"
#include "formats/json_rows.h"

namespace skippr {

namespace {

void append_csv_text(std::string_view text, std::string& out) {
  if (!text.empty() && text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(text);
    return;
  }
  out.push_back('"');
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

void append_csv_cell(const Column& column, size_t row, std::string& out) {
  if (!column.is_valid(row)) return;  // NULL: nothing between the delimiters
  switch (column.type) {
    case Type::kBool:
      out.append(column.int_at(row) ? "true" : "false");
      break;
    case Type::kInt64:
      fmt::format_to(std::back_inserter(out), "{}", column.int_at(row));
      break;
    case Type::kDouble:
      fmt::format_to(std::back_inserter(out), "{}", column.double_at(row));
      break;
    case Type::kTimestamp:
      out.append(format_iso8601_micros(column.int_at(row)));
      break;
    case Type::kDate:
      out.append(format_date(column.int_at(row)));
      break;
    case Type::kBinary:
      out.append(base64_encode(column.string_at(row)));
      break;
    case Type::kString:
    case Type::kJson:
      append_csv_text(column.string_at(row), out);
      break;
  }
}

}  // namespace

std::string encode_jsonl(const Batch& batch) {
  std::string out;
  out.reserve(batch.byte_size() + batch.rows * 16);
  for (size_t row = 0; row < batch.rows; ++row) {
    append_row_json(batch, row, out);
    out.push_back('\n');
  }
  return out;
}

std::string encode_csv(const Batch& batch) {
  std::string out;
  out.reserve(batch.byte_size() + batch.rows * 8);
  for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
    if (f > 0) out.push_back(',');
    append_csv_text(batch.schema.fields[f].name, out);
  }
  out.append("\r\n");
  for (size_t row = 0; row < batch.rows; ++row) {
    for (size_t f = 0; f < batch.columns.size(); ++f) {
      if (f > 0) out.push_back(',');
      append_csv_cell(batch.columns[f], row, out);
    }
    out.append("\r\n");
  }
  return out;
}

Result<ParquetFileWriter> ParquetFileWriter::open() {
  auto db = DuckDbDatabase::open(":memory:");
  if (!db) return std::unexpected(db.error());
  auto conn = DuckDbConnection::connect(*db);
  if (!conn) return std::unexpected(conn.error());
  return ParquetFileWriter(std::move(*db), std::move(*conn));
}

Status ParquetFileWriter::write(const Batch& batch, const std::filesystem::path& path, const Options& options) {
  for (size_t f = 0; f < batch.columns.size(); ++f) {
    if (auto row = first_invalid_utf8_row(batch.columns[f])) {
      return fail(ErrorKind::kBadInput, fmt::format("field {} has invalid UTF-8 in row {}",
                                                    quote_identifier(batch.schema.fields[f].name), *row));
    }
  }
  std::string definition;
  for (const auto& field : batch.schema.fields) {
    if (!definition.empty()) definition += ", ";
    const bool text = options.json_as_text && field.type == Type::kJson;
    definition += fmt::format("{} {}", quote_identifier(field.name), text ? "VARCHAR" : duckdb_sql_type(field.type));
  }
  SKIPPR_TRY(conn_.execute(fmt::format("CREATE OR REPLACE TEMP TABLE skippr_batch ({})", definition)));
  {
    auto appender = DuckDbAppender::create(conn_, "skippr_batch");
    if (!appender) return std::unexpected(appender.error());
    std::vector<duckdb_logical_type> types(batch.columns.size());
    for (size_t c = 0; c < types.size(); ++c) types[c] = appender->column_type(c);
    duckdb_data_chunk chunk = duckdb_create_data_chunk(types.data(), types.size());
    for (auto& type : types) duckdb_destroy_logical_type(&type);
    struct ChunkGuard {
      duckdb_data_chunk& chunk;
      ~ChunkGuard() { duckdb_destroy_data_chunk(&chunk); }
    } guard{chunk};
    const size_t chunk_rows = duckdb_vector_size();
    for (size_t first = 0; first < batch.rows; first += chunk_rows) {
      const size_t count = std::min(chunk_rows, batch.rows - first);
      duckdb_data_chunk_reset(chunk);
      for (size_t c = 0; c < batch.columns.size(); ++c) {
        copy_column_to_vector(batch.columns[c], first, count, duckdb_data_chunk_get_vector(chunk, c));
      }
      duckdb_data_chunk_set_size(chunk, count);
      SKIPPR_TRY(appender->append(chunk));
    }
    SKIPPR_TRY(appender->close());
  }
  std::string extra;
  if (!options.field_ids.empty()) {
    std::string ids;
    for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
      ids +=
          fmt::format("{}{}: {}", f ? ", " : "", quote_literal(batch.schema.fields[f].name), options.field_ids.at(f));
    }
    extra += fmt::format(", FIELD_IDS {{{}}}", ids);
  }
  if (!options.key_value_metadata.empty()) {
    std::string kv;
    for (const auto& [key, value] : options.key_value_metadata) {
      kv += fmt::format("{}{}: {}", kv.empty() ? "" : ", ", quote_literal(key), quote_literal(value));
    }
    extra += fmt::format(", KV_METADATA {{{}}}", kv);
  }
  auto copied = conn_.execute(fmt::format("COPY skippr_batch TO {} (FORMAT parquet, COMPRESSION {}{})",
                                          quote_literal(path.string()), options.compression, extra));
  (void)conn_.execute("DROP TABLE IF EXISTS skippr_batch");  // frees the rows now, not at the next batch
  return copied;
}

}  // namespace skippr
