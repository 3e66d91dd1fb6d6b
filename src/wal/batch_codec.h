// Serialises a Batch (schema + Arrow-like columns) to bytes and back. Used for the column part of a WAL BATCH
// record; the metadata recovery needs (seq, position) lives outside it, uncompressed.
//
// Two encodings of the column part, told apart by the record type (wal/record_format.h):
// - kBatch (format 1, written before block encoding existed; still read): [u64 serialized size][one zstd frame].
// - kBatchBlocks (format 2, written now): [u64 serialized size] then the serialized bytes cut into blocks of
//   kBlockBytes, each [u8 codec][u32 raw bytes][u32 stored bytes][stored bytes], codec 0 = stored raw, 1 = zstd.
//   A block is compressed only when a trial on a sample of it saves at least 1/8: zstd on incompressible data costs
//   CPU and saves no disk bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/batch.h"
#include "core/result.h"

namespace skippr::wal {

inline constexpr size_t kBlockBytes = 1 << 20;

enum class BlockCodec : uint8_t { kRaw = 0, kZstd = 1 };

// Plain (uncompressed) serialisation.
std::string serialize_batch(const Batch& batch);
// kCorruption when the bytes do not describe a consistent batch.
Result<Batch> deserialize_batch(std::string_view bytes);

// Format 2 (kBatchBlocks). kInternal when the batch's columns do not match its row count.
Result<std::string> encode_batch_blocks(const Batch& batch, int zstd_level);
Result<Batch> decode_batch_blocks(std::string_view encoded);

// Format 1 (kBatch): read for WALs written by earlier versions. Writing it is kept only so tests can make such a WAL.
Result<std::string> compress_batch(const Batch& batch, int zstd_level);
Result<Batch> decompress_batch(std::string_view compressed);

}  // namespace skippr::wal
