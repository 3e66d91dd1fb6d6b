#include "wal/wal.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <thread>

#include "core/env.h"
#include "core/failpoint.h"
#include "support/fault_env.h"
#include "wal/batch_codec.h"
#include "wal/byte_io.h"
#include "wal/record_format.h"
#include "wal/segment.h"
#include "wal/wal_test_util.h"

namespace skippr {
namespace {

namespace fs = std::filesystem;
using skippr::testing::batch_with_every_type;
using skippr::testing::expect_batches_equal;
using skippr::testing::FaultEnv;
using skippr::testing::flip_byte;
using skippr::testing::read_all;
using skippr::testing::ScratchDir;
using skippr::testing::write_all;

Position position(uint64_t n) { return Position{R"({"offset":)" + std::to_string(n * 100) + "}"}; }

class WalTest : public ::testing::Test {
 protected:
  WalOptions options(uint64_t bytes_per_file = 64ull << 20) const {
    WalOptions o;
    o.dir = scratch_.path() / "pipelines" / "bikes" / "wal";
    o.pipeline = "bikes";
    o.epoch = 1;
    o.bytes_per_file = bytes_per_file;
    return o;
  }

  std::unique_ptr<Wal> open(const WalOptions& o) {
    auto wal = Wal::open(o);
    EXPECT_TRUE(wal) << wal.error().message;
    return wal ? std::move(*wal) : nullptr;
  }

  // Commits batches first..last (seeded by their number, positioned by position(n)).
  void commit_range(Wal& wal, uint64_t first, uint64_t last) {
    for (uint64_t n = first; n <= last; ++n) {
      auto id = wal.commit(batch_with_every_type(20, static_cast<int>(n)), position(n));
      ASSERT_TRUE(id) << id.error().message;
      EXPECT_EQ(*id, (BatchId{"bikes", 1, n}));
    }
  }

  std::vector<std::string> segment_names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(options().dir)) names.push_back(entry.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  ScratchDir scratch_;
};

TEST_F(WalTest, CommittedBatchesSurviveReopenAndReadBackExactly) {
  {
    auto wal = open(options());
    EXPECT_TRUE(wal->last_position().empty());
    EXPECT_EQ(wal->last_committed_seq(), 0u);
    commit_range(*wal, 1, 5);
  }
  EXPECT_TRUE(fs::is_directory(options().dir)) << "open creates the directory and its parents";
  auto wal = open(options());
  EXPECT_EQ(wal->last_committed_seq(), 5u);
  EXPECT_EQ(wal->last_position(), position(5));
  EXPECT_EQ(wal->landed_watermark(), 0u);
  EXPECT_GT(wal->bytes_on_disk(), 0u);
  const auto pending = wal->pending();
  ASSERT_EQ(pending.size(), 5u);
  for (uint64_t n = 1; n <= 5; ++n) {
    const WalBatchInfo& info = pending[n - 1];
    EXPECT_EQ(info.seq, n);
    EXPECT_EQ(info.id, (BatchId{"bikes", 1, n}));
    EXPECT_EQ(info.position_after, position(n));
    EXPECT_EQ(info.rows, 20u);
    auto batch = wal->read_batch(info);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(batch_with_every_type(20, static_cast<int>(n)), *batch);
  }
}

// A batch of several streams commits as one record: its parts come back from the WAL after a reopen, in order, and
// a reader of one batch refuses it rather than land one stream of it.
TEST_F(WalTest, ABatchOfSeveralStreamsIsOneRecordReadBackWhole) {
  std::vector<Batch> parts = {batch_with_every_type(20, 1), batch_with_every_type(3, 2)};
  parts[0].stream = "orders";
  parts[1].stream = "users";
  {
    auto wal = open(options());
    auto encoded = wal->encode_parts(parts);
    ASSERT_TRUE(encoded) << encoded.error().message;
    EXPECT_EQ(encoded->rows, 23u);
    ASSERT_TRUE(wal->commit(*encoded, position(1)));
  }
  auto wal = open(options());
  ASSERT_EQ(wal->pending().size(), 1u);
  EXPECT_EQ(wal->pending()[0].rows, 23u);
  auto read = wal->read_parts(wal->pending()[0]);
  ASSERT_TRUE(read) << read.error().message;
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].stream, "orders");
  EXPECT_EQ((*read)[1].stream, "users");
  expect_batches_equal(parts[1], (*read)[1]);
  EXPECT_FALSE(wal->read_batch(wal->pending()[0]));
}

TEST_F(WalTest, AWalWrittenBeforeBlockEncodingIsStillRead) {
  // Format 1: BATCH records whose columns are one zstd frame, as versions before BATCH_BLOCKS wrote them.
  const WalOptions o = options();
  fs::create_directories(o.dir);
  std::string segment =
      wal::encode_record(wal::RecordType::kSegmentHeader, wal::encode_segment_header({o.epoch, 1, 0, Position{}}));
  for (uint64_t n = 1; n <= 3; ++n) {
    const std::string meta = wal::encode_batch_meta({n, BatchId{"bikes", 1, n}, position(n), 20});
    segment += wal::encode_record(wal::RecordType::kBatch, meta,
                                  *wal::compress_batch(batch_with_every_type(20, static_cast<int>(n)), 3));
  }
  write_all(o.dir / wal::segment_file_name(1), segment);

  auto wal = open(o);
  ASSERT_EQ(wal->pending().size(), 3u);
  EXPECT_EQ(wal->last_position(), position(3));
  for (const WalBatchInfo& info : wal->pending()) {
    auto batch = wal->read_batch(info);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(batch_with_every_type(20, static_cast<int>(info.seq)), *batch);
  }
  commit_range(*wal, 4, 4);  // new records are BATCH_BLOCKS, behind the old ones in the same segment
  wal.reset();
  wal = open(o);
  ASSERT_EQ(wal->pending().size(), 4u);
  auto fourth = wal->read_batch(wal->pending().back());
  ASSERT_TRUE(fourth) << fourth.error().message;
  expect_batches_equal(batch_with_every_type(20, 4), *fourth);
}

// A WAL of the format before lineages (segment header version 1) is read: its batches keep the ids they were
// committed with (a destination may already hold them under those), and the first commit of a state with a lineage
// starts a new segment, whose header names it, so every id read back is the id that was sent.
TEST_F(WalTest, AWalWrittenBeforeLineagesKeepsItsIdsAndNewBatchesGetTheLineage) {
  const std::string lineage = "0123456789abcdef0123456789abcdef";
  WalOptions o = options();
  fs::create_directories(o.dir);
  std::string header;
  {
    wal::ByteWriter w(header);
    w.u32(1);  // format 1: epoch, first seq, landed watermark, position; no lineage
    w.u64(o.epoch);
    w.u64(1);
    w.u64(0);
    w.str("");
  }
  std::string segment = wal::encode_record(wal::RecordType::kSegmentHeader, header);
  for (uint64_t n = 1; n <= 2; ++n) {
    const std::string meta = wal::encode_batch_meta({n, BatchId{"bikes", 1, n}, position(n), 20});
    segment += wal::encode_record(wal::RecordType::kBatchBlocks, meta,
                                  *wal::encode_batch_blocks(batch_with_every_type(20, static_cast<int>(n)), 1));
  }
  write_all(o.dir / wal::segment_file_name(1), segment);

  o.lineage = lineage;
  auto wal = open(o);
  ASSERT_EQ(wal->pending().size(), 2u);
  EXPECT_EQ(wal->pending()[0].id.str(), "bikes/1/1");
  auto id = wal->commit(batch_with_every_type(20, 3), position(3));
  ASSERT_TRUE(id) << id.error().message;
  EXPECT_EQ(id->str(), "bikes/" + lineage + "/1/3");
  EXPECT_EQ(segment_names().size(), 2u) << "the new lineage starts a segment of its own";
  wal.reset();

  wal = open(o);
  const auto pending = wal->pending();
  ASSERT_EQ(pending.size(), 3u);
  EXPECT_EQ(pending[1].id.str(), "bikes/1/2");
  EXPECT_EQ(pending[2].id, *id);
  auto third = wal->read_batch(pending[2]);
  ASSERT_TRUE(third) << third.error().message;
  expect_batches_equal(batch_with_every_type(20, 3), *third);
  wal.reset();

  // A state with yet another lineage does not own this WAL: it is reported, never silently adopted.
  o.lineage = "ffffffffffffffffffffffffffffffff";
  auto other = Wal::open(o);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(other.error().message.find("lineage"), std::string::npos) << other.error().message;
}

TEST_F(WalTest, AFirstWalStartsAtItsInitialPosition) {
  WalOptions o = options();
  o.initial_position = position(41);
  auto wal = open(o);
  EXPECT_EQ(wal->last_position(), position(41));
  wal.reset();
  wal = open(o);  // still nothing on disk: still the initial position
  EXPECT_EQ(wal->last_position(), position(41));
  auto id = wal->commit(batch_with_every_type(5, 1), position(42));
  ASSERT_TRUE(id) << id.error().message;
  wal.reset();
  o.initial_position = {};
  wal = open(o);  // the segment's header carries the start, the batch the rest
  EXPECT_EQ(wal->last_position(), position(42));
  auto inspected = Wal::inspect(o.dir);
  ASSERT_TRUE(inspected);
  EXPECT_EQ(inspected->batches.size(), 1u);
}

TEST_F(WalTest, EncodedBatchesCommitLikeBatches) {
  auto wal = open(options());
  auto encoded = wal->encode(batch_with_every_type(50, 9));
  ASSERT_TRUE(encoded) << encoded.error().message;
  EXPECT_EQ(encoded->rows, 50u);
  auto id = wal->commit(*encoded, position(1));
  ASSERT_TRUE(id) << id.error().message;
  wal.reset();
  wal = open(options());
  ASSERT_EQ(wal->pending().size(), 1u);
  EXPECT_EQ(wal->pending()[0].rows, 50u);
  auto batch = wal->read_batch(wal->pending()[0]);
  ASSERT_TRUE(batch) << batch.error().message;
  expect_batches_equal(batch_with_every_type(50, 9), *batch);
}

TEST_F(WalTest, CommitPassesTheFsyncFailpointsInOrder) {
  static std::vector<std::string> hits;
  hits.clear();
  failpoint::set_handler([](std::string_view name) { hits.emplace_back(name); });
  auto wal = open(options());
  commit_range(*wal, 1, 1);
  failpoint::set_handler(nullptr);
  EXPECT_EQ(hits, (std::vector<std::string>{std::string(failpoint::kWalBeforeFsync),
                                            std::string(failpoint::kWalAfterFsync)}));
}

TEST_F(WalTest, EveryCutOfTheLastRecordIsATornTailRecoveredToTheBatchBefore) {
  WalBatchInfo last;
  fs::path segment;
  {
    auto wal = open(options());
    commit_range(*wal, 1, 2);
    // A one-row batch keeps the record short: every cut is a reopen plus a commit.
    ASSERT_TRUE(wal->commit(batch_with_every_type(1, 3), position(3)));
    last = wal->pending().back();
    segment = last.segment;
  }
  ASSERT_EQ(last.seq, 3u);
  const std::string intact = read_all(segment);
  ASSERT_EQ(intact.size(), last.offset + last.record_bytes);

  for (uint64_t k = 0; k < last.record_bytes; ++k) {
    SCOPED_TRACE("cut after " + std::to_string(k) + " bytes of the last record");
    write_all(segment, intact.substr(0, last.offset + k));
    auto wal = open(options());
    ASSERT_TRUE(wal);
    EXPECT_EQ(fs::file_size(segment), last.offset) << "the torn record is truncated away";
    EXPECT_EQ(wal->last_committed_seq(), 2u);
    EXPECT_EQ(wal->last_position(), position(2));
    ASSERT_EQ(wal->pending().size(), 2u);
    auto id = wal->commit(batch_with_every_type(3, 99), position(3));
    ASSERT_TRUE(id) << id.error().message;
    EXPECT_EQ(id->seq, 3u);
  }
}

TEST_F(WalTest, AFlippedByteInTheLastRecordIsATornTail) {
  WalBatchInfo last;
  {
    auto wal = open(options());
    commit_range(*wal, 1, 3);
    last = wal->pending().back();
  }
  flip_byte(last.segment, last.offset + last.record_bytes - 1);
  auto wal = open(options());
  ASSERT_TRUE(wal);
  EXPECT_EQ(wal->last_committed_seq(), 2u);
  EXPECT_EQ(fs::file_size(last.segment), last.offset);
}

// Damage that is not at the tail of the newest segment must stop recovery and change nothing.
void expect_corruption_at(const WalOptions& options, const fs::path& file, uint64_t offset) {
  const std::string before = read_all(file);
  auto wal = Wal::open(options);
  ASSERT_FALSE(wal);
  EXPECT_EQ(wal.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(wal.error().message.find(file.string()), std::string::npos) << wal.error().message;
  EXPECT_NE(wal.error().message.find("at byte offset " + std::to_string(offset) + ":"), std::string::npos)
      << wal.error().message;
  EXPECT_NE(wal.error().message.find("RESET PIPELINE bikes"), std::string::npos) << wal.error().message;
  EXPECT_NE(wal.error().message.find("an append destination receives those rows a second time"), std::string::npos)
      << "RESET advice must say what it duplicates";
  EXPECT_EQ(read_all(file), before) << "recovery must not modify a corrupt WAL";
  auto inspected = Wal::inspect(options.dir);
  ASSERT_FALSE(inspected);
  EXPECT_EQ(inspected.error().kind, ErrorKind::kCorruption);
}

TEST_F(WalTest, AFlippedByteInAnEarlierRecordOfTheNewestSegmentIsCorruption) {
  WalBatchInfo first;
  {
    auto wal = open(options());
    commit_range(*wal, 1, 3);
    first = wal->pending().front();
  }
  flip_byte(first.segment, first.offset + first.record_bytes / 2);
  expect_corruption_at(options(), first.segment, first.offset);
}

TEST_F(WalTest, ALengthFieldPointingPastTheEndIsCorruptionWhenValidRecordsFollow) {
  WalBatchInfo first;
  {
    auto wal = open(options());
    commit_range(*wal, 1, 3);
    first = wal->pending().front();
  }
  flip_byte(first.segment, first.offset + 3);  // the high byte of the length: the record now "runs past EOF"
  expect_corruption_at(options(), first.segment, first.offset);
}

TEST_F(WalTest, AFlippedByteInAnOlderSegmentIsCorruption) {
  WalBatchInfo first;
  {
    auto wal = open(options(/*bytes_per_file=*/1));
    commit_range(*wal, 1, 3);
    first = wal->pending().front();
  }
  ASSERT_EQ(segment_names().size(), 3u);
  // The last byte of the oldest segment: at its tail, but the segment is not the newest.
  flip_byte(first.segment, first.offset + first.record_bytes - 1);
  expect_corruption_at(options(1), first.segment, first.offset);
}

// Columns that neither compress nor fit in the part of a payload the start-up scan reads (SegmentReader's front).
Batch incompressible_batch(int seed) {
  Batch b;
  b.add_column({"noise", Type::kBinary});
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  for (int r = 0; r < 64; ++r) {
    std::string value(4096, '\0');
    for (char& c : value) c = static_cast<char>(rng());
    b.columns[0].append_string(value);
  }
  b.rows = 64;
  return b;
}

TEST_F(WalTest, DamageInALargePayloadOfAnOlderSegmentIsCaughtWhenTheBatchIsRead) {
  std::vector<WalBatchInfo> committed;
  {
    auto wal = open(options(/*bytes_per_file=*/1));
    for (uint64_t n = 1; n <= 3; ++n) ASSERT_TRUE(wal->commit(incompressible_batch(static_cast<int>(n)), position(n)));
    committed = wal->pending();
  }
  ASSERT_EQ(segment_names().size(), 3u);
  const WalBatchInfo& first = committed.front();
  ASSERT_GT(first.record_bytes, 200u << 10) << "the payload must be larger than the scanned front";
  // Deep in the columns, past the front the scan reads: the open does not see it (older segments were synced in
  // full before the next one began, so they cannot be torn; their payloads are not read at start-up) ...
  flip_byte(first.segment, first.offset + first.record_bytes - 1000);
  auto wal = open(options(1));
  ASSERT_NE(wal, nullptr);
  ASSERT_EQ(wal->pending().size(), 3u);
  // ... but reading the batch to land it does, naming the file and the offset, and the others still read.
  auto damaged = wal->read_batch(wal->pending()[0]);
  ASSERT_FALSE(damaged);
  EXPECT_EQ(damaged.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(damaged.error().message.find(first.segment), std::string::npos) << damaged.error().message;
  EXPECT_NE(damaged.error().message.find("at byte offset " + std::to_string(first.offset) + ":"), std::string::npos)
      << damaged.error().message;
  for (size_t i = 1; i < 3; ++i) {
    auto batch = wal->read_batch(wal->pending()[i]);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(incompressible_batch(static_cast<int>(i + 1)), *batch);
  }
}

TEST_F(WalTest, OpenReadsOlderSegmentsWithoutTheirLargePayloads) {
  {
    auto wal = open(options(/*bytes_per_file=*/1));
    for (uint64_t n = 1; n <= 6; ++n) ASSERT_TRUE(wal->commit(incompressible_batch(static_cast<int>(n)), position(n)));
  }
  const std::vector<std::string> names = segment_names();
  ASSERT_EQ(names.size(), 6u);
  uint64_t older_bytes = 0;
  for (size_t i = 0; i + 1 < names.size(); ++i) older_bytes += fs::file_size(options().dir / names[i]);
  const uint64_t newest_bytes = fs::file_size(options().dir / names.back());

  FaultEnv env(default_env());
  WalOptions o = options(1);
  o.env = &env;
  auto wal = open(o);
  ASSERT_NE(wal, nullptr);
  EXPECT_EQ(wal->pending().size(), 6u);
  // The newest segment in full (a torn tail can only be there), of the others little more than a header and the
  // 64 KiB payload front per record: well under half of their ~260 KiB records.
  EXPECT_GE(env.bytes_read(), newest_bytes);
  EXPECT_LT(env.bytes_read(), newest_bytes + older_bytes / 2)
      << "older: " << older_bytes << ", newest: " << newest_bytes;
}

// A source position larger than the 64 KiB front a scan keeps of each record (a File source's position names every
// object it finished: 1,500 objects on S3 made one of 90 KiB, and every restart then called the WAL corrupt). In
// older segments (front only) and in the newest (checksummed in full), each batch's position comes back whole.
TEST_F(WalTest, PositionsLargerThanTheScannedFrontOfARecordComeBackWhole) {
  auto big_position = [](uint64_t n) {
    return Position{std::string(150 << 10, static_cast<char>('a' + n)) + std::to_string(n)};
  };
  {
    auto wal = open(options(/*bytes_per_file=*/1));  // one batch per segment: older ones are scanned front-only
    for (uint64_t n = 1; n <= 3; ++n) {
      ASSERT_TRUE(wal->commit(batch_with_every_type(20, static_cast<int>(n)), big_position(n)));
    }
  }
  auto wal = open(options(1));
  ASSERT_NE(wal, nullptr);
  EXPECT_EQ(wal->last_position(), big_position(3));
  const auto pending = wal->pending();
  ASSERT_EQ(pending.size(), 3u);
  for (uint64_t n = 1; n <= 3; ++n) {
    EXPECT_EQ(pending[n - 1].position_after, big_position(n)) << "batch " << n;
    auto batch = wal->read_batch(pending[n - 1]);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(batch_with_every_type(20, static_cast<int>(n)), *batch);
  }
}

TEST_F(WalTest, DamageInALargePayloadOfTheNewestSegmentIsFoundAtOpen) {
  WalBatchInfo first;
  {
    auto wal = open(options());
    for (uint64_t n = 1; n <= 2; ++n) ASSERT_TRUE(wal->commit(incompressible_batch(static_cast<int>(n)), position(n)));
    first = wal->pending().front();
  }
  flip_byte(first.segment, first.offset + first.record_bytes - 1000);
  expect_corruption_at(options(), first.segment, first.offset);
}

TEST_F(WalTest, ASegmentFromAnotherEpochIsCorruption) {
  { commit_range(*open(options()), 1, 2); }
  WalOptions next = options();
  next.epoch = 2;
  auto wal = Wal::open(next);
  ASSERT_FALSE(wal);
  EXPECT_EQ(wal.error().kind, ErrorKind::kCorruption);
  EXPECT_NE(wal.error().message.find("epoch 1 but the pipeline is at epoch 2"), std::string::npos)
      << wal.error().message;
}

TEST_F(WalTest, AnEmptyOrHalfCreatedNewestSegmentIsRemoved) {
  for (const std::string& leftover : {std::string(), std::string("\x20\x00\x00", 3)}) {
    ScratchDir fresh;
    WalOptions o = options();
    o.dir = fresh.path() / "wal";
    { commit_range(*open(o), 1, 3); }
    const fs::path stray = o.dir / wal::segment_file_name(4);
    write_all(stray, leftover);  // a crash right after creating the next segment
    auto wal = open(o);
    ASSERT_TRUE(wal);
    EXPECT_FALSE(fs::exists(stray));
    EXPECT_EQ(wal->last_committed_seq(), 3u);
    EXPECT_EQ(wal->last_position(), position(3));
    auto id = wal->commit(batch_with_every_type(1, 4), position(4));
    ASSERT_TRUE(id) << id.error().message;
    EXPECT_EQ(id->seq, 4u);
  }
}

TEST_F(WalTest, SegmentsRollOverAndLandedOnesAreDeletedButNeverTheNewest) {
  static int deletions;
  deletions = 0;
  failpoint::set_handler([](std::string_view name) { deletions += name == failpoint::kWalSegmentDelete; });
  {
    auto wal = open(options(/*bytes_per_file=*/1));  // every batch after the first starts a segment
    commit_range(*wal, 1, 5);
    EXPECT_EQ(segment_names(),
              (std::vector<std::string>{wal::segment_file_name(1), wal::segment_file_name(2), wal::segment_file_name(3),
                                        wal::segment_file_name(4), wal::segment_file_name(5)}));
    ASSERT_TRUE(wal->mark_landed(3));
    EXPECT_EQ(segment_names(), (std::vector<std::string>{wal::segment_file_name(4), wal::segment_file_name(5)}));
    EXPECT_EQ(deletions, 3);
    ASSERT_EQ(wal->pending().size(), 2u);
    EXPECT_EQ(wal->pending().front().seq, 4u);
    ASSERT_TRUE(wal->mark_landed(5));
    EXPECT_EQ(segment_names(), std::vector<std::string>{wal::segment_file_name(5)}) << "the newest stays";
    EXPECT_EQ(deletions, 4);
    EXPECT_TRUE(wal->pending().empty());
  }
  failpoint::set_handler(nullptr);

  auto wal = open(options(1));
  EXPECT_EQ(wal->last_committed_seq(), 5u);
  EXPECT_EQ(wal->last_position(), position(5));
  EXPECT_EQ(wal->landed_watermark(), 5u);
  EXPECT_TRUE(wal->pending().empty());
  commit_range(*wal, 6, 6);
}

TEST_F(WalTest, TheNewestSegmentAloneRestoresTheResumePointEvenIfLandedRecordsAreLost) {
  {
    auto wal = open(options(1));
    commit_range(*wal, 1, 4);
    ASSERT_TRUE(wal->mark_landed(4));  // leaves only segment 4, its LANDED record unsynced
  }
  // Simulate losing the LANDED record: cut the newest segment back to its header + batch 4.
  auto inspected = Wal::inspect(options().dir);
  ASSERT_TRUE(inspected) << inspected.error().message;
  ASSERT_EQ(inspected->batches.size(), 1u);
  const WalBatchInfo& batch4 = inspected->batches.front();
  fs::resize_file(batch4.segment, batch4.offset + batch4.record_bytes);

  auto wal = open(options(1));
  EXPECT_EQ(wal->last_committed_seq(), 4u);
  EXPECT_EQ(wal->last_position(), position(4));
  EXPECT_EQ(wal->landed_watermark(), 3u) << "what precedes the oldest segment has landed";
  ASSERT_EQ(wal->pending().size(), 1u);
  EXPECT_EQ(wal->pending().front().seq, 4u);
}

TEST_F(WalTest, AFailedFsyncPoisonsTheWalForGood) {
  FaultEnv env(default_env());
  WalOptions o = options();
  o.env = &env;
  auto wal = open(o);
  commit_range(*wal, 1, 1);
  env.set_fault({.op = testing::Op::kSync, .err = EIO, .path_part = "", .skip = 0, .sticky = false, .torn_bytes = 0});
  auto failed = wal->commit(batch_with_every_type(1, 2), position(2));
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().kind, ErrorKind::kFatalIo);
  const uint64_t syncs_after_failure = env.syncs();

  env.clear_fault();  // even if the device recovers, the WAL must not trust a second fsync
  auto again = wal->commit(batch_with_every_type(1, 2), position(2));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().kind, ErrorKind::kFatalIo);
  EXPECT_EQ(again.error().message, failed.error().message);
  EXPECT_EQ(wal->mark_landed(1).error().kind, ErrorKind::kFatalIo);
  EXPECT_EQ(wal->sync().error().kind, ErrorKind::kFatalIo);
  EXPECT_FALSE(wal->read_batch(wal->pending().front()));
  EXPECT_EQ(env.syncs(), syncs_after_failure) << "fsync must never be retried";
  EXPECT_EQ(env.syncs_after_failed_sync(), 0u);
}

TEST_F(WalTest, ADiskFullAppendIsCutBackAndTheNextCommitSucceeds) {
  FaultEnv env(default_env());
  WalOptions o = options();
  o.env = &env;
  {
    auto wal = open(o);
    commit_range(*wal, 1, 2);
    const uint64_t bytes = wal->bytes_on_disk();
    env.set_fault(
        {.op = testing::Op::kAppend, .err = ENOSPC, .path_part = "", .skip = 0, .sticky = true, .torn_bytes = 100});
    auto full = wal->commit(batch_with_every_type(5, 3), position(3));
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().kind, ErrorKind::kDiskFull);
    EXPECT_NE(full.error().message.find("disk is full"), std::string::npos);
    EXPECT_EQ(fs::file_size(wal->pending().back().segment), bytes) << "the half-written record is gone";
    env.clear_fault();
    commit_range(*wal, 3, 3);
  }
  auto wal = open(options());
  EXPECT_EQ(wal->last_committed_seq(), 3u);
  EXPECT_EQ(wal->pending().size(), 3u);
}

TEST_F(WalTest, InspectReportsATornTailWithoutTouchingIt) {
  WalBatchInfo last;
  {
    auto wal = open(options());
    commit_range(*wal, 1, 3);
    ASSERT_TRUE(wal->mark_landed(1));
    ASSERT_TRUE(wal->sync());
    last = wal->pending().back();
  }
  const std::string intact = read_all(last.segment);
  // Cut the file inside batch 3's record (the LANDED record after it goes too).
  const std::string torn = intact.substr(0, last.offset + last.record_bytes / 2);
  write_all(last.segment, torn);

  auto inspected = Wal::inspect(options().dir);
  ASSERT_TRUE(inspected) << inspected.error().message;
  EXPECT_TRUE(inspected->torn_tail);
  EXPECT_EQ(inspected->last_committed_seq, 2u);
  EXPECT_EQ(inspected->last_position, position(2));
  EXPECT_EQ(inspected->epoch, 1u);
  ASSERT_EQ(inspected->batches.size(), 2u);
  EXPECT_EQ(read_all(last.segment), torn) << "inspect must not truncate";
  ASSERT_EQ(inspected->segments.size(), 1u);
  EXPECT_EQ(inspected->segments[0].bytes, torn.size());
}

TEST_F(WalTest, InspectSeesLandedBatchesAndTheWatermark) {
  {
    auto wal = open(options());
    commit_range(*wal, 1, 3);
    ASSERT_TRUE(wal->mark_landed(2));
  }
  auto inspected = Wal::inspect(options().dir);
  ASSERT_TRUE(inspected) << inspected.error().message;
  EXPECT_FALSE(inspected->torn_tail);
  EXPECT_EQ(inspected->landed_watermark, 2u);
  ASSERT_EQ(inspected->batches.size(), 3u);
  EXPECT_TRUE(inspected->batches[1].landed);
  EXPECT_FALSE(inspected->batches[2].landed);
  auto reopened = open(options());
  ASSERT_EQ(reopened->pending().size(), 1u);
  EXPECT_EQ(reopened->pending().front().seq, 3u);
}

TEST_F(WalTest, ReadBatchRechecksTheChecksum) {
  auto wal = open(options());
  commit_range(*wal, 1, 2);
  const WalBatchInfo first = wal->pending().front();
  flip_byte(first.segment, first.offset + first.record_bytes - 2);
  auto batch = wal->read_batch(first);
  ASSERT_FALSE(batch);
  EXPECT_EQ(batch.error().kind, ErrorKind::kCorruption);
  EXPECT_TRUE(wal->read_batch(wal->pending().back()));
}

TEST_F(WalTest, ConcurrentCommittersGetDistinctConsecutiveSeqs) {
  auto wal = open(options(4096));
  std::vector<std::thread> threads;
  std::vector<std::vector<uint64_t>> seqs(4);
  for (size_t t = 0; t < seqs.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        auto id = wal->commit(batch_with_every_type(3, static_cast<int>(t)), position(t));
        ASSERT_TRUE(id) << id.error().message;
        seqs[t].push_back(id->seq);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint64_t> all;
  for (const auto& s : seqs) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), 100u);
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), 100u);
  wal.reset();
  auto reopened = open(options(4096));
  const auto pending = reopened->pending();
  ASSERT_EQ(pending.size(), 100u);
  for (const auto& info : pending) ASSERT_TRUE(reopened->read_batch(info)) << info.seq;
}

TEST_F(WalTest, ConcurrentCommittersShareOneFsync) {
  FaultEnv env(default_env());
  env.sync_latency_ms = 5;  // a disk slow enough that committers pile up behind a sync, even on tmpfs
  WalOptions o = options();
  o.env = &env;
  auto wal = open(o);
  const uint64_t syncs_before = env.syncs();
  constexpr int kThreads = 8, kEach = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        auto id = wal->commit(batch_with_every_type(3, t), position(static_cast<uint64_t>(t)));
        ASSERT_TRUE(id) << id.error().message;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const uint64_t syncs = env.syncs() - syncs_before;
  EXPECT_LT(syncs, static_cast<uint64_t>(kThreads * kEach) / 2) << "committers did not share their fsyncs";
  wal.reset();
  auto reopened = open(options());
  EXPECT_EQ(reopened->pending().size(), static_cast<size_t>(kThreads * kEach)) << "a shared fsync lost a batch";
}

}  // namespace
}  // namespace skippr
