#include "wal/batch_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "wal/wal_test_util.h"

namespace skippr::wal {
namespace {

using skippr::testing::batch_with_every_type;
using skippr::testing::expect_batches_equal;

TEST(BatchCodec, RoundTripsEveryTypeWithNulls) {
  const Batch original = batch_with_every_type(100, 1);
  ASSERT_FALSE(original.columns[0].validity.empty()) << "the fixture must contain nulls";
  auto compressed = compress_batch(original, 3);
  ASSERT_TRUE(compressed) << compressed.error().message;
  auto decoded = decompress_batch(*compressed);
  ASSERT_TRUE(decoded) << decoded.error().message;
  expect_batches_equal(original, *decoded);
}

TEST(BatchCodec, RoundTripsAllValidAndEmptyBatches) {
  Batch all_valid;
  all_valid.add_column({"id", Type::kInt64});
  all_valid.add_column({"s", Type::kString});
  for (int i = 0; i < 5; ++i) {
    all_valid.columns[0].append_int(i);
    all_valid.columns[1].append_string(std::string(static_cast<size_t>(i), 'x'));
  }
  all_valid.rows = 5;
  for (const Batch& original : {all_valid, batch_with_every_type(0, 0), Batch{}}) {
    auto decoded = decompress_batch(*compress_batch(original, 1));
    ASSERT_TRUE(decoded) << decoded.error().message;
    expect_batches_equal(original, *decoded);
  }
}

TEST(BatchCodec, RejectsTruncatedOrTrailingBytes) {
  const std::string raw = serialize_batch(batch_with_every_type(10, 2));
  ASSERT_TRUE(deserialize_batch(raw));
  for (size_t cut : {size_t{0}, size_t{3}, raw.size() / 2, raw.size() - 1}) {
    auto decoded = deserialize_batch(std::string_view(raw).substr(0, cut));
    ASSERT_FALSE(decoded) << "cut at " << cut;
    EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  }
  EXPECT_FALSE(deserialize_batch(raw + "x"));
}

TEST(BatchCodec, RefusesAnInconsistentBatchAtCommitTime) {
  Batch b = batch_with_every_type(4, 0);
  b.rows = 5;  // columns hold 4 rows
  auto compressed = compress_batch(b, 1);
  ASSERT_FALSE(compressed);
  EXPECT_EQ(compressed.error().kind, ErrorKind::kInternal);
}

// A batch of `blobs` values of 64 KiB of random bytes, then `texts` short repetitive strings.
Batch random_then_text(size_t blobs, size_t texts) {
  Batch b;
  b.add_column({"v", Type::kBinary});
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < blobs; ++i) {
    std::string v(64 << 10, '\0');
    for (size_t k = 0; k < v.size(); k += 8) {
      const uint64_t r = rng();
      std::memcpy(v.data() + k, &r, 8);
    }
    b.columns[0].append_string(v);
  }
  for (size_t i = 0; i < texts; ++i) b.columns[0].append_string("station-" + std::to_string(i % 50) + "-docked");
  b.rows = blobs + texts;
  return b;
}

// The codec byte of each block of a format-2 encoding.
std::vector<BlockCodec> block_codecs(std::string_view encoded) {
  std::vector<BlockCodec> codecs;
  for (size_t at = 8; at < encoded.size();) {
    codecs.push_back(static_cast<BlockCodec>(encoded[at]));
    uint32_t stored = 0;
    std::memcpy(&stored, encoded.data() + at + 5, 4);
    at += 9 + stored;
  }
  return codecs;
}

TEST(BatchBlocks, RoundTripsEveryTypeAndEmptyBatches) {
  for (const Batch& original : {batch_with_every_type(100, 1), batch_with_every_type(0, 0), Batch{}}) {
    auto encoded = encode_batch_blocks(original, 1);
    ASSERT_TRUE(encoded) << encoded.error().message;
    auto decoded = decode_batch_blocks(*encoded);
    ASSERT_TRUE(decoded) << decoded.error().message;
    expect_batches_equal(original, *decoded);
  }
}

TEST(BatchBlocks, StoresRandomBlocksRawAndCompressesTheRest) {
  // Serialized: 0.8 MiB of offsets, 4 MiB of random bytes, then 3.4 MiB of repetitive text, in blocks of 1 MiB.
  const Batch original = random_then_text(64, 200000);
  const size_t serialized = serialize_batch(original).size();
  auto encoded = encode_batch_blocks(original, 1);
  ASSERT_TRUE(encoded) << encoded.error().message;
  const auto codecs = block_codecs(*encoded);
  ASSERT_EQ(codecs.size(), (serialized + kBlockBytes - 1) / kBlockBytes);
  EXPECT_EQ(codecs[2], BlockCodec::kRaw) << "random bytes do not compress";
  EXPECT_EQ(codecs[3], BlockCodec::kRaw);
  EXPECT_EQ(codecs.back(), BlockCodec::kZstd) << "the text compresses";
  EXPECT_LT(encoded->size(), serialized - (2 << 20)) << "the text blocks shrank";
  EXPECT_LT(encoded->size(), serialized + 8 + codecs.size() * 9 + 1) << "raw blocks cost only their header";
  auto decoded = decode_batch_blocks(*encoded);
  ASSERT_TRUE(decoded) << decoded.error().message;
  expect_batches_equal(original, *decoded);
}

// A value of one repeated byte compresses far beyond any fixed ratio (zstd makes a 1 MiB block of it a few bytes):
// such a batch must still read back. A 1.5 MB note of 'x' once could not, and sat in the WAL as "corruption".
TEST(BatchBlocks, RoundTripsABatchThatCompressesBeyondAnyRatio) {
  Batch original;
  original.schema.fields = {{"note", Type::kString}};
  original.columns.emplace_back(Type::kString);
  original.columns[0].append_string(std::string(6 << 20, 'x'));
  original.columns[0].append_string("small");
  original.rows = 2;
  auto encoded = encode_batch_blocks(original, 1);
  ASSERT_TRUE(encoded) << encoded.error().message;
  EXPECT_LT(encoded->size() * 2048, serialize_batch(original).size()) << "the case this guards is not exercised";
  auto decoded = decode_batch_blocks(*encoded);
  ASSERT_TRUE(decoded) << decoded.error().message;
  expect_batches_equal(original, *decoded);
  // A damaged size still cannot ask for more than the blocks there could hold.
  std::string inflated = *encoded;
  inflated[7] = 0x40;
  auto refused = decode_batch_blocks(inflated);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kCorruption);
}

TEST(BatchBlocks, RejectsTruncatedDamagedOrUnknownBlocks) {
  const std::string good = *encode_batch_blocks(random_then_text(20, 20000), 1);
  ASSERT_TRUE(decode_batch_blocks(good));
  for (size_t cut : {size_t{0}, size_t{5}, size_t{12}, good.size() / 2, good.size() - 1}) {
    auto decoded = decode_batch_blocks(std::string_view(good).substr(0, cut));
    ASSERT_FALSE(decoded) << "cut at " << cut;
    EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  }
  std::string unknown_codec = good;
  unknown_codec[8] = 7;
  EXPECT_FALSE(decode_batch_blocks(unknown_codec));
  std::string bad_zstd = good;
  bad_zstd[good.size() - 20] ^= 0x5a;  // inside the last, compressed block
  ASSERT_EQ(block_codecs(good).back(), BlockCodec::kZstd);
  EXPECT_FALSE(decode_batch_blocks(bad_zstd));
  EXPECT_FALSE(decode_batch_blocks(good + "x"));
}

// A commit of several streams: one part each, names and columns kept; one part of the unnamed stream is the very
// bytes a batch was before streams existed, so every WAL written then reads as that one part.
TEST(BatchCodec, PartsOfSeveralStreamsRoundTripAndOneUnnamedPartIsTheOldEncoding) {
  std::vector<Batch> parts = {batch_with_every_type(30, 1), batch_with_every_type(0, 2), batch_with_every_type(7, 3)};
  parts[0].stream = "public.orders";
  parts[1].stream = "empty";
  parts[2].stream = "events";
  auto encoded = encode_parts_blocks(parts, 1);
  ASSERT_TRUE(encoded) << encoded.error().message;
  auto decoded = decode_parts_blocks(*encoded);
  ASSERT_TRUE(decoded) << decoded.error().message;
  ASSERT_EQ(decoded->size(), 3u);
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ((*decoded)[i].stream, parts[i].stream);
    expect_batches_equal(parts[i], (*decoded)[i]);
  }
  EXPECT_FALSE(decode_batch_blocks(*encoded)) << "a reader of one batch must not take the first of several parts";

  const Batch one = batch_with_every_type(12, 4);
  EXPECT_EQ(serialize_parts(std::span(&one, 1)), serialize_batch(one));
  auto old = decode_parts_blocks(*encode_batch_blocks(one, 1));
  ASSERT_TRUE(old) << old.error().message;
  ASSERT_EQ(old->size(), 1u);
  EXPECT_EQ(old->front().stream, "");
  expect_batches_equal(one, old->front());
}

TEST(BatchCodec, DamagedPartsAreCorruption) {
  std::vector<Batch> parts = {batch_with_every_type(5, 1), batch_with_every_type(5, 2)};
  parts[0].stream = "a";
  parts[1].stream = "b";
  const std::string raw = serialize_parts(parts);
  ASSERT_TRUE(deserialize_parts(raw));
  for (size_t cut : {size_t{4}, size_t{9}, raw.size() / 2, raw.size() - 1}) {
    auto decoded = deserialize_parts(std::string_view(raw).substr(0, cut));
    ASSERT_FALSE(decoded) << "cut at " << cut;
    EXPECT_EQ(decoded.error().kind, ErrorKind::kCorruption);
  }
  EXPECT_FALSE(deserialize_parts(raw + "x"));
  std::string many = raw;
  many[4] = '\x7f';  // a part count far beyond the bytes
  EXPECT_FALSE(deserialize_parts(many));
}

}  // namespace
}  // namespace skippr::wal
