// Serialises a Batch (schema + Arrow-like columns) to bytes and back, zstd-compressed. Used for the column part of
// a WAL BATCH record; the metadata recovery needs (seq, position) lives outside it, uncompressed.
#pragma once

#include <string>
#include <string_view>

#include "core/batch.h"
#include "core/result.h"

namespace skippr::wal {

// Plain (uncompressed) serialisation.
std::string serialize_batch(const Batch& batch);
// kCorruption when the bytes do not describe a consistent batch.
Result<Batch> deserialize_batch(std::string_view bytes);

// serialize_batch + zstd: [u64 serialized size][zstd frame].
Result<std::string> compress_batch(const Batch& batch, int zstd_level);
Result<Batch> decompress_batch(std::string_view compressed);

}  // namespace skippr::wal
