// The S3 WAL and the DynamoDB state store against moto_server, through the fault proxy: commits survive the process,
// unknown outcomes on the object PUT and on the commit record are resolved without writing anywhere else, an object
// that was never committed is never taken for a commit, and a writer whose lease was taken over changes nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "clients/aws/s3_client.h"
#include "engine/pipeline_storage.h"
#include "remote_wal/remote_test_env.h"
#include "wal/wal_test_util.h"

namespace skippr::test {
namespace {

using skippr::testing::batch_with_every_type;
using skippr::testing::expect_batches_equal;

Position position(uint64_t n) { return Position{R"({"offset":)" + std::to_string(n * 100) + "}"}; }

class S3WalTest : public ::testing::Test {
 protected:
  S3WalTest() : env_(remote_storage_env(/*lease_seconds=*/3)), scoped_(with_retry_seconds(env_)) {
    SharedProxy().clear();
    auto settings = settings_from_env(dir_.path());
    EXPECT_TRUE(settings) << settings.error().message;
    settings_ = *settings;
  }
  ~S3WalTest() override { SharedProxy().clear(); }

  static std::map<std::string, std::string> with_retry_seconds(std::map<std::string, std::string> env) {
    env["SINK_RETRY_SECONDS"] = "4";  // how long the WAL retries a transient failure before it gives up
    return env;
  }

  std::unique_ptr<PipelineStorage> storage() {
    auto storage = PipelineStorage::open(settings_, "bikes");
    EXPECT_TRUE(storage) << storage.error().message;
    return storage ? std::move(*storage) : nullptr;
  }

  // A writer: its storage, its lease, the state it saved, its WAL.
  struct Writer {
    std::unique_ptr<PipelineStorage> storage;
    std::unique_ptr<PipelineLease> lease;
    PipelineState state;
    std::unique_ptr<Wal> wal;
    // The process ends: its WAL, then its lease (released), then the store the lease lives in.
    void end() {
      wal.reset();
      lease.reset();
      storage.reset();
    }
    ~Writer() { end(); }
    Writer() = default;
    Writer(Writer&&) = default;
  };
  // The writer holding the lease is cut off from DynamoDB's renewals (a partition, a pause) until its lease runs out
  // in the item; then a new writer waits a whole lease on its own clock, sees no renewal, and takes over. `waited`:
  // how long that new writer's acquire took.
  Writer take_over_from_a_writer_cut_off(std::chrono::steady_clock::duration* waited = nullptr) {
    SharedProxy().add({.target_regex = "UpdateItem",
                       .body_regex = "\"SET #lease_expires_ms = :x\"",
                       .action = "status",
                       .status = 503,
                       .times = -1});
    std::this_thread::sleep_for(std::chrono::milliseconds(3300));
    const auto asked = std::chrono::steady_clock::now();
    Writer fresh = writer();
    if (waited != nullptr) *waited = std::chrono::steady_clock::now() - asked;
    SharedProxy().clear();
    return fresh;
  }
  Writer writer() {
    Writer w;
    w.storage = storage();
    auto lease = w.storage->state().acquire();
    EXPECT_TRUE(lease) << lease.error().message;
    w.lease = std::move(*lease);
    auto state = w.storage->state().load();
    EXPECT_TRUE(state) << state.error().message;
    w.state = *state;
    if (w.state.lineage.empty()) {
      w.state.lineage = "0123456789abcdef0123456789abcdef";
      EXPECT_TRUE(w.storage->state().save(w.state));
    }
    auto wal = w.storage->open_wal(w.state, *w.lease);
    EXPECT_TRUE(wal) << wal.error().message;
    if (wal) w.wal = std::move(*wal);
    return w;
  }

  std::vector<std::string> keys() {
    auto service = resolve_aws_service({}, "s3", "test");
    S3Client s3(*service);
    auto listed = s3.list_objects(env_.at("SKIPPR_WAL_S3_BUCKET"), "");
    EXPECT_TRUE(listed) << listed.error().message;
    std::vector<std::string> out;
    for (const auto& o : *listed) out.push_back(o.key);
    return out;
  }

  TempDir dir_;
  std::map<std::string, std::string> env_;
  ScopedEnvironment scoped_;
  Settings settings_;
};

TEST_F(S3WalTest, CommittedBatchesOutliveTheProcessAndLandedOnesAreDeleted) {
  {
    Writer w = writer();
    for (uint64_t n = 1; n <= 3; ++n) {
      auto id = w.wal->commit(batch_with_every_type(40, static_cast<int>(n)), position(n));
      ASSERT_TRUE(id) << id.error().message;
      EXPECT_EQ(id->seq, n);
    }
    ASSERT_TRUE(w.wal->mark_landed(1));
    EXPECT_EQ(keys().size(), 2u) << "the landed batch's object is deleted";
  }
  // A new process on a new machine: nothing local is read.
  Writer w = writer();
  EXPECT_EQ(w.wal->last_committed_seq(), 3u);
  EXPECT_EQ(w.wal->landed_watermark(), 1u);
  EXPECT_EQ(w.wal->last_position(), position(3));
  const auto pending = w.wal->pending();
  ASSERT_EQ(pending.size(), 2u);
  for (size_t i = 0; i < pending.size(); ++i) {
    EXPECT_EQ(pending[i].seq, i + 2);
    EXPECT_EQ(pending[i].id, (BatchId{"bikes", 1, i + 2, w.state.lineage}));
    auto batch = w.wal->read_batch(pending[i]);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(batch_with_every_type(40, static_cast<int>(i + 2)), *batch);
  }
  ASSERT_TRUE(w.wal->mark_landed(3));
  EXPECT_TRUE(keys().empty());
  auto inspected = w.storage->inspect_wal(w.state);
  ASSERT_TRUE(inspected) << inspected.error().message;
  EXPECT_EQ(inspected->last_committed_seq, 3u);
  EXPECT_EQ(inspected->landed_watermark, 3u);
}

TEST_F(S3WalTest, AnUnknownOutcomeOnTheObjectPutIsResolvedAtTheSameKey) {
  Writer w = writer();
  // The PUT reached S3, the answer was lost; then three SlowDowns; then a 500 after S3 had stored it.
  const int lost = SharedProxy().add({.method = "PUT", .path_regex = "\\.batch$", .action = "drop_after_forward"});
  auto first = w.wal->commit(batch_with_every_type(30, 1), position(1));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(SharedProxy().hits(lost), 1);
  const int slow = SharedProxy().add(
      {.method = "PUT", .path_regex = "\\.batch$", .action = "status", .status = 503, .code = "SlowDown", .times = 3});
  auto second = w.wal->commit(batch_with_every_type(30, 2), position(2));
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_EQ(SharedProxy().hits(slow), 3);
  const int acted =
      SharedProxy().add({.method = "PUT", .path_regex = "\\.batch$", .action = "status_after_forward", .status = 500});
  auto third = w.wal->commit(batch_with_every_type(30, 3), position(3));
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(SharedProxy().hits(acted), 1);

  const auto objects = keys();
  ASSERT_EQ(objects.size(), 3u) << "one object per batch, never a second key for a retried PUT";
  w.end();
  Writer again = writer();
  ASSERT_EQ(again.wal->pending().size(), 3u);
  for (const auto& info : again.wal->pending()) {
    auto batch = again.wal->read_batch(info);
    ASSERT_TRUE(batch) << batch.error().message;
    expect_batches_equal(batch_with_every_type(30, static_cast<int>(info.seq)), *batch);
  }
}

TEST_F(S3WalTest, AnUnknownOutcomeOnTheCommitRecordIsResolvedByReadingItBack) {
  Writer w = writer();
  const int lost =
      SharedProxy().add({.target_regex = "UpdateItem", .body_regex = "wal_seq = :s", .action = "drop_after_forward"});
  ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 1), position(1)));
  EXPECT_EQ(SharedProxy().hits(lost), 1);
  const int acted = SharedProxy().add(
      {.target_regex = "UpdateItem", .body_regex = "wal_seq = :s", .action = "status_after_forward", .status = 500});
  ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 2), position(2)));
  EXPECT_EQ(SharedProxy().hits(acted), 1);
  const int throttled = SharedProxy().add({.target_regex = "UpdateItem",
                                           .body_regex = "wal_seq = :s",
                                           .action = "status",
                                           .status = 400,
                                           .code = "ProvisionedThroughputExceededException",
                                           .times = 2});
  auto third = w.wal->commit(batch_with_every_type(30, 3), position(3));
  ASSERT_TRUE(third) << third.error().message;
  EXPECT_EQ(third->seq, 3u) << "each batch committed once: no seq was taken twice";
  EXPECT_EQ(SharedProxy().hits(throttled), 2);
  w.end();
  Writer again = writer();
  EXPECT_EQ(again.wal->last_committed_seq(), 3u);
  EXPECT_EQ(again.wal->pending().size(), 3u);
}

TEST_F(S3WalTest, AnObjectThatWasNeverCommittedIsDeletedAtOpenAndNeverTakenForACommit) {
  {
    Writer w = writer();
    ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 1), position(1)));
    // The object goes in; every write of the commit record fails until the WAL gives up (SINK_RETRY_SECONDS).
    SharedProxy().add(
        {.target_regex = "UpdateItem", .body_regex = "wal_seq = :s", .action = "status", .status = 503, .times = -1});
    auto failed = w.wal->commit(batch_with_every_type(30, 2), position(2));
    ASSERT_FALSE(failed);
    EXPECT_EQ(keys().size(), 2u) << "the orphan is there";
    SharedProxy().clear();
  }
  Writer w = writer();
  EXPECT_EQ(w.wal->last_committed_seq(), 1u);
  EXPECT_EQ(w.wal->last_position(), position(1));
  ASSERT_EQ(w.wal->pending().size(), 1u);
  EXPECT_EQ(keys().size(), 1u) << "the orphan was deleted";
  auto next = w.wal->commit(batch_with_every_type(30, 7), position(7));
  ASSERT_TRUE(next) << next.error().message;
  EXPECT_EQ(next->seq, 2u);
  auto batch = w.wal->read_batch(w.wal->pending().back());
  ASSERT_TRUE(batch);
  expect_batches_equal(batch_with_every_type(30, 7), *batch);
}

// A writer of the epoch before a RESET that was paused mid-PUT puts its object in late: the next start deletes that
// one object, and never the new epoch's committed batches.
TEST_F(S3WalTest, AnOldEpochsLatePutIsDeletedAndTheNewEpochsBatchesAreKept) {
  std::string stale_key;
  {
    Writer w = writer();
    ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 1), position(1)));
    stale_key = w.wal->pending().back().segment;
  }
  {
    auto storage = this->storage();
    auto lease = storage->state().acquire();
    ASSERT_TRUE(lease) << lease.error().message;
    auto epoch = storage->reset();
    ASSERT_TRUE(epoch) << epoch.error().message;
    EXPECT_EQ(*epoch, 2u);
  }
  EXPECT_TRUE(keys().empty());
  {
    Writer w = writer();
    EXPECT_EQ(w.state.epoch, 2u);
    ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 21), position(21)));
    ASSERT_TRUE(w.wal->commit(batch_with_every_type(30, 22), position(22)));
  }
  auto service = resolve_aws_service({}, "s3", "test");
  S3Client s3(*service);
  ASSERT_TRUE(s3.put_object_if_absent(env_.at("SKIPPR_WAL_S3_BUCKET"), stale_key, "late", "text/plain"));
  ASSERT_EQ(keys().size(), 3u);
  Writer w = writer();
  ASSERT_EQ(w.wal->pending().size(), 2u);
  EXPECT_EQ(w.wal->pending().front().id.epoch, 2u);
  EXPECT_EQ(keys().size(), 2u) << "only the stale object of epoch 1 went";
}

TEST_F(S3WalTest, ASecondHolderIsRefusedNamingTheFirst) {
  auto first = storage();
  auto held = first->state().acquire();
  ASSERT_TRUE(held) << held.error().message;
  auto second = storage();
  auto refused = second->state().acquire();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kLocked);
  EXPECT_NE(refused.error().message.find("pid " + std::to_string(getpid())), std::string::npos)
      << refused.error().message;
  held->reset();  // released
  auto now = second->state().acquire();
  ASSERT_TRUE(now) << now.error().message;
  EXPECT_GT((*now)->token(), 1u) << "the fencing token only grows";
}

TEST_F(S3WalTest, AWriterWhoseLeaseWasTakenOverCommitsAndLandsNothing) {
  Writer old = writer();
  ASSERT_TRUE(old.wal->commit(batch_with_every_type(30, 1), position(1)));
  ASSERT_TRUE(old.wal->commit(batch_with_every_type(30, 2), position(2)));
  std::chrono::steady_clock::duration waited{};
  Writer fresh = take_over_from_a_writer_cut_off(&waited);
  EXPECT_GE(waited, std::chrono::seconds(3)) << "took over without waiting";
  ASSERT_GT(fresh.lease->token(), old.lease->token());
  EXPECT_EQ(fresh.wal->pending().size(), 2u);
  ASSERT_TRUE(fresh.wal->commit(batch_with_every_type(30, 3), position(3)));

  // The old writer carries on: its object for seq 3 goes in under its own token, but the commit is refused.
  auto late = old.wal->commit(batch_with_every_type(30, 99), position(99));
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().kind, ErrorKind::kFenced) << late.error().message;
  auto landed = old.wal->mark_landed(2);
  ASSERT_FALSE(landed);
  EXPECT_EQ(landed.error().kind, ErrorKind::kFenced);
  EXPECT_FALSE(old.lease->check()) << "its own view of the lease ran out too";
  auto saved = old.storage->state().save(old.state);
  ASSERT_FALSE(saved) << "a writer that lost its lease must not overwrite the new owner's state";
  EXPECT_EQ(saved.error().kind, ErrorKind::kFenced);

  fresh.end();
  Writer next = writer();  // its open deletes the old writer's leftover and keeps the committed batches
  ASSERT_EQ(next.wal->pending().size(), 3u);
  EXPECT_EQ(keys().size(), 3u);
  auto third = next.wal->read_batch(next.wal->pending().back());
  ASSERT_TRUE(third);
  expect_batches_equal(batch_with_every_type(30, 3), *third);
}

// Found by the model (model/s3_lease.pml, COMMIT_WITHOUT_TOKEN): the old writer's next commit may come before the new
// owner commits anything, when the committed seq is still the one it expects. Only the lease's token in the commit's
// condition refuses it then.
TEST_F(S3WalTest, AWriterTakenOverIsRefusedEvenBeforeTheNewOwnerCommits) {
  Writer old = writer();
  ASSERT_TRUE(old.wal->commit(batch_with_every_type(30, 1), position(1)));
  Writer fresh = take_over_from_a_writer_cut_off();
  ASSERT_GT(fresh.lease->token(), old.lease->token());

  auto late = old.wal->commit(batch_with_every_type(30, 99), position(99));  // seq 2, which nobody committed yet
  ASSERT_FALSE(late) << "a writer whose lease was taken over committed";
  EXPECT_EQ(late.error().kind, ErrorKind::kFenced) << late.error().message;
  ASSERT_TRUE(fresh.wal->commit(batch_with_every_type(30, 2), position(2)));
  fresh.end();
  Writer next = writer();
  ASSERT_EQ(next.wal->pending().size(), 2u);
  auto second = next.wal->read_batch(next.wal->pending().back());
  ASSERT_TRUE(second);
  expect_batches_equal(batch_with_every_type(30, 2), *second);
  EXPECT_EQ(next.wal->last_position().token, position(2).token);
}

}  // namespace
}  // namespace skippr::test
