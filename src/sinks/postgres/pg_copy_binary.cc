#include "sinks/postgres/pg_copy_binary.h"

#include <bit>
#include <cstring>

#include "clients/postgres/pg_client.h"

namespace skippr {

PgCopyBinaryWriter::PgCopyBinaryWriter(bool with_row_index) : with_row_index_(with_row_index) {
  static constexpr char kSignature[] = "PGCOPY\n\377\r\n\0";
  buffer_.append(kSignature, 11);
  put_u32(0);  // flags
  put_u32(0);  // header extension length
}

void PgCopyBinaryWriter::put_u16(uint16_t v) {
  v = std::byteswap(v);
  buffer_.append(reinterpret_cast<const char*>(&v), 2);
}
void PgCopyBinaryWriter::put_u32(uint32_t v) {
  v = std::byteswap(v);
  buffer_.append(reinterpret_cast<const char*>(&v), 4);
}
void PgCopyBinaryWriter::put_u64(uint64_t v) {
  v = std::byteswap(v);
  buffer_.append(reinterpret_cast<const char*>(&v), 8);
}

void PgCopyBinaryWriter::append_rows(const Batch& batch, size_t begin, size_t end) {
  const size_t fields = batch.columns.size() + (with_row_index_ ? 1 : 0);
  for (size_t row = begin; row < end; ++row) {
    put_u16(static_cast<uint16_t>(fields));
    for (const Column& column : batch.columns) {
      if (!column.is_valid(row)) {
        put_u32(0xFFFFFFFFu);
        continue;
      }
      switch (column.type) {
        case Type::kBool:
          put_u32(1);
          buffer_.push_back(column.fixed[row] ? 1 : 0);
          break;
        case Type::kInt64:
        case Type::kDouble:  // `fixed` holds the double's bits; float8send sends them big-endian
          put_u32(8);
          put_u64(static_cast<uint64_t>(column.fixed[row]));
          break;
        case Type::kTimestamp:
          put_u32(8);
          put_u64(static_cast<uint64_t>(column.fixed[row] - kPgEpochUnixMicros));
          break;
        case Type::kDate:
          put_u32(4);
          put_u32(static_cast<uint32_t>(static_cast<int32_t>(column.fixed[row] - kPgEpochUnixDays)));
          break;
        case Type::kString:
        case Type::kBinary: {
          const std::string_view v = column.string_at(row);
          put_u32(static_cast<uint32_t>(v.size()));
          buffer_.append(v);
          break;
        }
        case Type::kJson: {  // jsonb's binary format: a version byte, then the text
          const std::string_view v = column.string_at(row);
          put_u32(static_cast<uint32_t>(v.size() + 1));
          buffer_.push_back(1);
          buffer_.append(v);
          break;
        }
      }
    }
    if (with_row_index_) {
      put_u32(8);
      put_u64(row);
    }
  }
}

void PgCopyBinaryWriter::append_trailer() { put_u16(0xFFFF); }

}  // namespace skippr
