#include "wal/batch_codec.h"

#include <fmt/format.h>
#include <zstd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <span>

#include "wal/byte_io.h"

namespace skippr::wal {

namespace {

// Column buffers are copied as raw memory; the WAL is only read on the machine (architecture) that wrote it.
static_assert(std::endian::native == std::endian::little, "the WAL column encoding assumes a little-endian host");

constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kPartsVersion = 2;       // several parts, one per stream (serialize_parts)
constexpr uint32_t kKeyedPartsVersion = 3;  // ... each with its own merge key

template <class T>
void put_array(ByteWriter& w, const std::vector<T>& values) {
  w.u64(values.size());
  w.bytes(std::string_view(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
}

template <class T>
bool get_array(ByteReader& r, std::vector<T>& out) {
  auto count = r.u64();
  if (!count || *count > r.remaining() / sizeof(T)) return false;
  auto raw = r.bytes(*count * sizeof(T));
  out.resize(*count);
  if (*count > 0) std::memcpy(out.data(), raw->data(), raw->size());
  return true;
}

std::unexpected<Error> malformed(std::string_view what) {
  return fail(ErrorKind::kCorruption, fmt::format("malformed batch in the WAL: {}", what));
}

// One compression context per thread: creating one per block would cost more than compressing a small block.
ZSTD_CCtx* thread_cctx() {
  struct Free {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  };
  thread_local std::unique_ptr<ZSTD_CCtx, Free> cctx(ZSTD_createCCtx());
  return cctx.get();
}

// Compresses `in` into the end of `out`; false (and `out` unchanged) when zstd fails or saves nothing.
bool append_zstd(std::string& out, std::string_view in, int level) {
  const size_t start = out.size();
  size_t n = 0;
  // resize_and_overwrite: the output buffer is not zero-filled first (a profile showed 12 % of commit in memset).
  out.resize_and_overwrite(start + ZSTD_compressBound(in.size()), [&](char* p, size_t size) {
    n = ZSTD_compressCCtx(thread_cctx(), p + start, size - start, in.data(), in.size(), level);
    return ZSTD_isError(n) || n >= in.size() ? start : start + n;
  });
  return out.size() > start;
}

// A fast trial: compress a few slices spread over the block (1/16 of a full block) and see whether zstd gains.
bool worth_compressing(std::string_view block, int level) {
  constexpr size_t kSlices = 4, kSliceBytes = 16 << 10;
  std::string sample;
  if (block.size() <= kSlices * kSliceBytes) {
    sample.assign(block);
  } else {
    const size_t stride = block.size() / kSlices;
    for (size_t i = 0; i < kSlices; ++i) sample.append(block.substr(i * stride, kSliceBytes));
  }
  std::string compressed;
  if (!append_zstd(compressed, sample, level)) return false;
  return compressed.size() * 8 <= sample.size() * 7;
}

}  // namespace

std::string serialize_batch(const Batch& batch) {
  std::string out;
  out.reserve(64 + batch.byte_size());
  ByteWriter w(out);
  w.u32(kFormatVersion);
  w.u64(batch.rows);
  w.u32(static_cast<uint32_t>(batch.schema.fields.size()));
  for (const Field& field : batch.schema.fields) {
    w.str(field.name);
    w.u8(static_cast<uint8_t>(field.type));
  }
  for (const Column& column : batch.columns) {
    put_array(w, column.validity);
    if (is_variable_length(column.type)) {
      put_array(w, column.offsets);
      w.u64(column.bytes.size());
      w.bytes(column.bytes);
    } else {
      put_array(w, column.fixed);
    }
  }
  return out;
}

Result<Batch> deserialize_batch(std::string_view bytes) {
  ByteReader r(bytes);
  auto version = r.u32();
  if (!version || *version != kFormatVersion) {
    return malformed(fmt::format("unknown format version {}", version ? *version : 0));
  }
  auto rows = r.u64();
  auto field_count = r.u32();
  if (!rows || !field_count) return malformed("truncated header");
  Batch batch;
  batch.rows = *rows;
  for (uint32_t i = 0; i < *field_count; ++i) {
    auto name = r.str();
    auto type_byte = r.u8();
    if (!name || !type_byte) return malformed("truncated schema");
    auto type = static_cast<Type>(*type_byte);
    if (*type_byte < static_cast<uint8_t>(Type::kBool) || *type_byte > static_cast<uint8_t>(Type::kJson)) {
      return malformed(fmt::format("field '{}' has unknown type {}", *name, *type_byte));
    }
    batch.schema.fields.push_back({std::string(*name), type});
  }
  for (const Field& field : batch.schema.fields) {
    Column column(field.type);
    if (!get_array(r, column.validity)) return malformed(fmt::format("column '{}': bad validity", field.name));
    if (!column.validity.empty() && column.validity.size() < (batch.rows + 7) / 8) {
      return malformed(fmt::format("column '{}': validity shorter than {} rows", field.name, batch.rows));
    }
    if (is_variable_length(field.type)) {
      auto byte_count = std::optional<uint64_t>{};
      std::optional<std::string_view> data;
      if (!get_array(r, column.offsets) || !(byte_count = r.u64()) || !(data = r.bytes(*byte_count))) {
        return malformed(fmt::format("column '{}': truncated values", field.name));
      }
      column.bytes.assign(*data);
      bool monotonic = column.offsets.size() == batch.rows + 1;
      for (size_t i = 1; monotonic && i < column.offsets.size(); ++i) {
        monotonic = column.offsets[i - 1] <= column.offsets[i];
      }
      if (!monotonic || column.offsets.back() > column.bytes.size()) {
        return malformed(fmt::format("column '{}': offsets do not match {} rows", field.name, batch.rows));
      }
    } else if (!get_array(r, column.fixed) || column.fixed.size() != batch.rows) {
      return malformed(fmt::format("column '{}': expected {} values", field.name, batch.rows));
    }
    batch.columns.push_back(std::move(column));
  }
  if (r.remaining() != 0) return malformed(fmt::format("{} trailing bytes", r.remaining()));
  return batch;
}

bool is_single_unnamed(std::span<const Batch> parts) {
  return parts.size() == 1 && parts.front().stream.empty() && parts.front().key.empty();
}

std::string serialize_parts(std::span<const Batch> parts) {
  if (is_single_unnamed(parts)) return serialize_batch(parts.front());
  const bool keyed = std::ranges::any_of(parts, [](const Batch& part) { return !part.key.empty(); });
  std::string out;
  ByteWriter w(out);
  w.u32(keyed ? kKeyedPartsVersion : kPartsVersion);
  w.u32(static_cast<uint32_t>(parts.size()));
  for (const Batch& part : parts) {
    w.str(part.stream);
    if (keyed) {
      w.u32(static_cast<uint32_t>(part.key.size()));
      for (const auto& column : part.key) w.str(column);
    }
    const std::string one = serialize_batch(part);
    w.u64(one.size());
    w.bytes(one);
  }
  return out;
}

Result<std::vector<Batch>> deserialize_parts(std::string_view bytes) {
  ByteReader r(bytes);
  auto version = r.u32();
  std::vector<Batch> parts;
  if (version && *version == kFormatVersion) {
    auto batch = deserialize_batch(bytes);
    if (!batch) return std::unexpected(batch.error());
    parts.push_back(std::move(*batch));
    return parts;
  }
  if (!version || (*version != kPartsVersion && *version != kKeyedPartsVersion)) {
    return malformed(fmt::format("unknown format version {}", version ? *version : 0));
  }
  auto count = r.u32();
  if (!count || *count > r.remaining()) return malformed("bad part count");
  for (uint32_t i = 0; i < *count; ++i) {
    auto stream = r.str();
    std::vector<std::string> key;
    if (*version == kKeyedPartsVersion) {
      auto columns = r.u32();
      if (!columns || *columns > r.remaining()) return malformed(fmt::format("part {} has a bad key", i));
      for (uint32_t k = 0; k < *columns; ++k) {
        auto column = r.str();
        if (!column) return malformed(fmt::format("part {} has a bad key", i));
        key.emplace_back(*column);
      }
    }
    auto size = r.u64();
    std::optional<std::string_view> one;
    if (!stream || !size || !(one = r.bytes(*size))) return malformed(fmt::format("part {} is cut short", i));
    auto batch = deserialize_batch(*one);
    if (!batch) return std::unexpected(batch.error());
    batch->stream = std::string(*stream);
    batch->key = std::move(key);
    parts.push_back(std::move(*batch));
  }
  if (r.remaining() != 0) return malformed(fmt::format("{} trailing bytes after the parts", r.remaining()));
  return parts;
}

Result<std::string> encode_batch_blocks(const Batch& batch, int zstd_level) {
  return encode_parts_blocks(std::span(&batch, 1), zstd_level);
}

Result<std::string> encode_parts_blocks(std::span<const Batch> parts, int zstd_level) {
  for (const Batch& part : parts) SKIPPR_TRY(part.check_shape());
  const std::string raw = serialize_parts(parts);
  constexpr size_t kBlockHeader = 9;
  std::string out;
  out.reserve(8 + raw.size() + (raw.size() / kBlockBytes + 1) * kBlockHeader);
  ByteWriter w(out);
  w.u64(raw.size());
  for (size_t begin = 0; begin < raw.size(); begin += kBlockBytes) {
    const std::string_view block = std::string_view(raw).substr(begin, kBlockBytes);
    const size_t header_at = out.size();
    w.u8(static_cast<uint8_t>(BlockCodec::kZstd));
    w.u32(static_cast<uint32_t>(block.size()));
    w.u32(0);  // stored size, patched below
    if (!worth_compressing(block, zstd_level) || !append_zstd(out, block, zstd_level)) {
      out[header_at] = static_cast<char>(BlockCodec::kRaw);
      out.append(block);
    }
    const auto stored = static_cast<uint32_t>(out.size() - header_at - kBlockHeader);
    for (int i = 0; i < 4; ++i) out[header_at + 5 + i] = static_cast<char>(stored >> (8 * i));
  }
  // It waits in the commit queue: give back what compression saved (a heap profile showed a whole batch's worth).
  out.shrink_to_fit();
  return out;
}

Result<Batch> decode_batch_blocks(std::string_view encoded) {
  auto parts = decode_parts_blocks(encoded);
  if (!parts) return std::unexpected(parts.error());
  if (parts->size() != 1 || !parts->front().stream.empty()) {
    return malformed(fmt::format("{} stream parts where one batch was expected", parts->size()));
  }
  return std::move(parts->front());
}

Result<std::vector<Batch>> decode_parts_blocks(std::string_view encoded) {
  ByteReader r(encoded);
  auto raw_size = r.u64();
  // A block holds at most kBlockBytes and takes at least its header and one byte, so this bounds what a damaged size
  // could make us allocate. (Not a compression ratio: zstd turns a block of one repeated byte into a few bytes, and
  // such a batch — one long value of a repeated character — must still read back.)
  constexpr size_t kSmallestBlock = 9 + 1;
  if (!raw_size || *raw_size > (encoded.size() / kSmallestBlock + 1) * kBlockBytes) {
    return malformed("bad serialized size");
  }
  std::string raw;
  size_t filled = 0;
  bool ok = true;
  raw.resize_and_overwrite(*raw_size, [&](char* p, size_t size) {
    while (ok && r.remaining() > 0) {
      auto codec = r.u8();
      auto raw_bytes = r.u32();
      auto stored_bytes = r.u32();
      std::optional<std::string_view> stored;
      ok = codec && raw_bytes && stored_bytes && (stored = r.bytes(*stored_bytes)) && *raw_bytes <= size - filled &&
           *raw_bytes <= kBlockBytes;
      if (!ok) break;
      if (*codec == static_cast<uint8_t>(BlockCodec::kRaw)) {
        ok = *stored_bytes == *raw_bytes;
        if (ok) std::memcpy(p + filled, stored->data(), stored->size());
      } else if (*codec == static_cast<uint8_t>(BlockCodec::kZstd)) {
        const size_t n = ZSTD_decompress(p + filled, *raw_bytes, stored->data(), stored->size());
        ok = !ZSTD_isError(n) && n == *raw_bytes;
      } else {
        ok = false;
      }
      if (ok) filled += *raw_bytes;
    }
    return filled;
  });
  if (!ok || filled != *raw_size) return malformed("a damaged or incomplete block");
  return deserialize_parts(raw);
}

Result<std::string> compress_batch(const Batch& batch, int zstd_level) {
  SKIPPR_TRY(batch.check_shape());
  const std::string raw = serialize_batch(batch);
  std::string out;
  ByteWriter(out).u64(raw.size());
  const size_t header = out.size();
  size_t n = 0;
  out.resize_and_overwrite(header + ZSTD_compressBound(raw.size()), [&](char* p, size_t size) {
    n = ZSTD_compress(p + header, size - header, raw.data(), raw.size(), zstd_level);
    return ZSTD_isError(n) ? header : header + n;
  });
  if (ZSTD_isError(n))
    return fail(ErrorKind::kInternal, fmt::format("zstd compression failed: {}", ZSTD_getErrorName(n)));
  return out;
}

Result<std::vector<Batch>> decompress_parts(std::string_view compressed) {
  auto batch = decompress_batch(compressed);
  if (!batch) return std::unexpected(batch.error());
  std::vector<Batch> parts;
  parts.push_back(std::move(*batch));
  return parts;
}

Result<Batch> decompress_batch(std::string_view compressed) {
  ByteReader r(compressed);
  auto raw_size = r.u64();
  if (!raw_size) return malformed("missing size");
  std::string_view frame = r.rest();
  const unsigned long long frame_size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (frame_size != *raw_size) return malformed("zstd frame size does not match the recorded size");
  std::string raw(*raw_size, '\0');
  const size_t n = ZSTD_decompress(raw.data(), raw.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != raw.size()) {
    return malformed(fmt::format("zstd decompression failed: {}", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short"));
  }
  return deserialize_batch(raw);
}

}  // namespace skippr::wal
