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
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr::wal {

inline constexpr size_t kBlockBytes = 1 << 20;

enum class BlockCodec : uint8_t { kRaw = 0, kZstd = 1 };

// Plain (uncompressed) serialisation of one batch: [u32 version 1][rows][schema][columns]. Its stream name is not
// part of it.
std::string serialize_batch(const Batch& batch);
// kCorruption when the bytes do not describe a consistent batch.
Result<Batch> deserialize_batch(std::string_view bytes);

// The parts of one commit, one Batch per stream. One part of the unnamed stream (every single-stream pipeline) is
// serialize_batch's bytes, as written before streams existed; otherwise [u32 version 2][u32 parts] then per part
// [u32 length + stream name][u64 length][serialize_batch of the part]. When any part carries its own merge key
// (Batch::key), version 3: the same with [u32 count][u32 length + column]... after each stream name. Reading takes
// all three.
std::string serialize_parts(std::span<const Batch> parts);
Result<std::vector<Batch>> deserialize_parts(std::string_view bytes);

// Format 2 (kBatchBlocks) of a commit's parts. kInternal when a part's columns do not match its row count.
Result<std::string> encode_parts_blocks(std::span<const Batch> parts, int zstd_level);
Result<std::vector<Batch>> decode_parts_blocks(std::string_view encoded);
// The same for a commit of one unnamed part; decoding anything else is kCorruption.
Result<std::string> encode_batch_blocks(const Batch& batch, int zstd_level);
Result<Batch> decode_batch_blocks(std::string_view encoded);

// Format 1 (kBatch): read for WALs written by earlier versions. Writing it is kept only so tests can make such a WAL.
Result<std::string> compress_batch(const Batch& batch, int zstd_level);
Result<Batch> decompress_batch(std::string_view compressed);
Result<std::vector<Batch>> decompress_parts(std::string_view compressed);  // the one batch, as the parts of a commit

}  // namespace skippr::wal
