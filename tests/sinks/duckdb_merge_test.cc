// The DuckDB sink's merge_by_key: order tokens per key (within a batch and across batches), deletes with
// tombstones, composite keys, replay, schema evolution, bad configuration and bad change fields. Every check reads
// the file through its own database handle after the sink is gone.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "clients/duckdb/duckdb_client.h"
#include "core/change_fields.h"
#include "core/failpoint.h"
#include "sink_test_util.h"
#include "sinks/duckdb/duckdb_sink.h"

namespace skippr {
namespace {

using testing::read_db;
using testing::scalar;
using testing::TempDir;
using Row = std::vector<std::optional<std::string>>;

Result<std::unique_ptr<Sink>> try_make_sink(const std::filesystem::path& path, const std::string& table,
                                            std::vector<std::string> primary_key) {
  ConnectorContext ctx;
  ctx.name = "warehouse";
  ctx.pipeline = "p";
  ctx.params = {{"path", path.string()}, {"table", table}};
  ctx.landing = Landing::kMergeByKey;
  ctx.primary_key = std::move(primary_key);
  return duckdb_sink_spec().make_sink(ctx);
}

std::unique_ptr<Sink> make_sink(const std::filesystem::path& path, std::vector<std::string> primary_key = {"id"},
                                const std::string& table = "t") {
  auto sink = try_make_sink(path, table, std::move(primary_key));
  EXPECT_TRUE(sink) << sink.error().message;
  return sink ? std::move(*sink) : nullptr;
}

// `id=payload ...` over the whole table, by id: the table's content in one comparable string.
std::string content(const std::filesystem::path& db, const std::string& table = "t") {
  return scalar(db, fmt::format("SELECT coalesce(string_agg(id || '=' || coalesce(payload, 'NULL'), ' ' ORDER BY id), "
                                "'') FROM {}",
                                table));
}

// A token above 2^64, so only a numeric (not a 64-bit, not a text) comparison orders them right: 1 followed by
// 21 digits of n.
std::string big_token(uint64_t n) { return fmt::format("1{:021}", n); }

// One change: (id, payload, _skippr_op, _skippr_order as a string).
Batch change(int64_t id, std::string_view op, const std::string& order, std::string_view payload) {
  Batch b;
  b.add_column({"id", Type::kInt64});
  b.add_column({"payload", Type::kString});
  b.add_column({std::string(kOpField), Type::kString});
  b.add_column({std::string(kOrderField), Type::kString});
  b.columns[0].append_int(id);
  if (op == "delete") {
    b.columns[1].append_null();  // CDC deletes carry the key only
  } else {
    b.columns[1].append_string(payload);
  }
  b.columns[2].append_string(op);
  b.columns[3].append_string(order);
  b.rows = 1;
  return b;
}

Batch concat(std::initializer_list<Batch> parts) {
  Batch out;
  for (const auto& part : parts) {
    auto st = out.append(part);
    EXPECT_TRUE(st) << st.error().message;
  }
  return out;
}

// The token the sink derives without _skippr_order: ((epoch << 40) + seq) << 32 + row, as the Postgres sink does.
std::string derived_token(uint64_t epoch, uint64_t seq, uint64_t row) {
  const unsigned __int128 token = ((((unsigned __int128)epoch << 40) + seq) << 32) + row;
  std::string digits;
  for (unsigned __int128 v = token; v > 0; v /= 10) digits.insert(digits.begin(), char('0' + int(v % 10)));
  return digits.empty() ? "0" : digits;
}

class DuckDbMerge : public ::testing::Test {
 protected:
  void apply(Sink& sink, const Batch& batch) {
    auto outcome = sink.write(batch, BatchId{"p", 1, ++seq_});
    ASSERT_TRUE(outcome) << outcome.error().message;
    ASSERT_EQ(*outcome, WriteOutcome::kApplied);
  }
  TempDir dir_;
  std::filesystem::path db_ = dir_.path() / "out.duckdb";
  uint64_t seq_ = 0;
};

TEST_F(DuckDbMerge, NewKeysAreInsertedWithTheDerivedTokenAndNoChangeFieldColumns) {
  {
    auto sink = make_sink(db_);
    apply(*sink, testing::simple_batch(3, 1));
    Batch upserts = change(10, "insert", big_token(1), "ten");  // change fields present: still not columns
    apply(*sink, upserts);
  }
  EXPECT_EQ(scalar(db_,
                   "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM "
                   "information_schema.columns WHERE table_name = 't'"),
            "id BIGINT, x DOUBLE, name VARCHAR, _skippr_order HUGEINT, payload VARCHAR");
  auto rows = read_db(db_, "SELECT id::VARCHAR, name, _skippr_order::VARCHAR FROM t ORDER BY id");
  EXPECT_EQ(rows.rows, (std::vector<Row>{{"1", "name-1", derived_token(1, 1, 0)},
                                         {"2", "name-2", derived_token(1, 1, 1)},
                                         {"3", "name-3", derived_token(1, 1, 2)},
                                         {"10", std::nullopt, big_token(1)}}));
  // No tombstone was needed; the staging tables are gone.
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM t__skippr_tombstones"), "0");
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM _skippr_batches"), "2");
}

TEST_F(DuckDbMerge, AnOlderChangeNeverOverwritesANewerOneAndDeletesLeaveTombstones) {
  auto sink = make_sink(db_);
  auto payload_of = [&](int id) {
    sink.reset();  // the file is read with a handle of its own
    auto value = scalar(db_, fmt::format("SELECT coalesce((SELECT payload FROM t WHERE id = {}), 'absent')", id));
    sink = make_sink(db_);
    return value;
  };
  apply(*sink, change(1, "insert", big_token(10), "v10"));
  EXPECT_EQ(payload_of(1), "v10");
  apply(*sink, change(1, "update", big_token(5), "v5-late"));
  EXPECT_EQ(payload_of(1), "v10") << "an older update overwrote a newer row";
  apply(*sink, change(1, "update", big_token(12), "v12"));
  EXPECT_EQ(payload_of(1), "v12");
  apply(*sink, change(1, "delete", big_token(20), ""));
  EXPECT_EQ(payload_of(1), "absent");
  apply(*sink, change(1, "insert", big_token(15), "v15-late"));
  EXPECT_EQ(payload_of(1), "absent") << "a late, older insert brought a deleted row back";
  apply(*sink, change(1, "update", big_token(20), "v20-same-token"));
  EXPECT_EQ(payload_of(1), "absent") << "a change as old as the tombstone brought the row back";
  apply(*sink, change(1, "insert", big_token(30), "v30"));
  EXPECT_EQ(payload_of(1), "v30") << "a newer insert after the delete must come back";
  apply(*sink, change(1, "delete", big_token(25), ""));
  EXPECT_EQ(payload_of(1), "v30") << "a delete older than the row removed it";
  // Numeric, not textual order: 10 is newer than 9.
  apply(*sink, change(4, "insert", "9", "nine"));
  apply(*sink, change(4, "update", "10", "ten"));
  EXPECT_EQ(payload_of(4), "ten");
  sink.reset();
  // The tombstone keeps the newest delete's token (the older delete of 25 did not move it back).
  EXPECT_EQ(scalar(db_, "SELECT string_agg(id || '@' || _skippr_order, ' ') FROM t__skippr_tombstones"),
            "1@" + big_token(25));
  EXPECT_EQ(scalar(db_, "SELECT _skippr_order::VARCHAR FROM t WHERE id = 1"), big_token(30));
}

TEST_F(DuckDbMerge, WithinOneBatchOnlyTheNewestChangePerKeyCounts) {
  {
    auto sink = make_sink(db_);
    apply(*sink, change(9, "insert", big_token(1), "kept"));  // untouched by the batch below
    apply(*sink, concat({change(2, "insert", big_token(100), "a"), change(2, "update", big_token(300), "c"),
                         change(2, "update", big_token(200), "b"), change(3, "insert", big_token(100), "x"),
                         change(3, "delete", big_token(150), ""), change(5, "delete", big_token(50), ""),
                         change(5, "insert", big_token(60), "back")}));
  }
  EXPECT_EQ(content(db_), "2=c 5=back 9=kept");
  EXPECT_EQ(scalar(db_, "SELECT string_agg(id || '@' || _skippr_order, ' ' ORDER BY id) FROM t__skippr_tombstones"),
            fmt::format("3@{}", big_token(150)));
}

TEST_F(DuckDbMerge, WithoutTokensTheLaterBatchAndTheLaterRowWin) {
  {
    auto sink = make_sink(db_);
    apply(*sink, testing::simple_batch(3, 1));
    Batch later = testing::simple_batch(3, 2);  // ids 2, 3, 3: the last row of id 3 wins
    later.columns[0] = Column(Type::kInt64);
    for (int64_t id : {2, 3, 3}) later.columns[0].append_int(id);
    later.columns[2] = Column(Type::kString);
    for (auto name : {"new-2", "first-3", "last-3"}) later.columns[2].append_string(name);
    apply(*sink, later);
    // The same BatchId again does nothing, even though its rows differ from what the table holds now.
    auto replay = sink->write(testing::simple_batch(3, 1), BatchId{"p", 1, 1});
    ASSERT_TRUE(replay) << replay.error().message;
    EXPECT_EQ(*replay, WriteOutcome::kAlreadyApplied);
    // A new epoch (after RESET) wins over every sequence of the old one.
    Batch reset = testing::simple_batch(1, 3);
    reset.columns[2] = Column(Type::kString);
    reset.columns[2].append_string("epoch-2");
    ASSERT_EQ(sink->write(reset, BatchId{"p", 2, 1}).value(), WriteOutcome::kApplied);
  }
  EXPECT_EQ(scalar(db_, "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) FROM t"), "1=name-1 2=new-2 3=epoch-2");
  EXPECT_EQ(scalar(db_, "SELECT _skippr_order::VARCHAR FROM t WHERE id = 2"), derived_token(1, 2, 0));
}

TEST_F(DuckDbMerge, CompositeKeysMatchOnEveryKeyColumn) {
  auto keyed = [](std::string_view region, int64_t id, std::string_view op, uint64_t order, std::string_view payload) {
    Batch b = change(id, op, big_token(order), payload);
    b.schema.fields.insert(b.schema.fields.begin(), Field{"region", Type::kString});
    b.columns.insert(b.columns.begin(), Column(Type::kString));
    b.columns[0].append_string(region);
    return b;
  };
  {
    auto sink = make_sink(db_, {"region", "id"});
    Batch first = concat({keyed("eu", 1, "insert", 1, "eu-1"), keyed("us", 1, "insert", 1, "us-1"),
                          keyed("eu", 2, "insert", 1, "eu-2")});
    apply(*sink, first);
    apply(*sink, concat({keyed("us", 1, "update", 2, "us-1b"), keyed("eu", 2, "delete", 2, "")}));
    apply(*sink, keyed("eu", 2, "insert", 1, "eu-2-late"));  // older than the delete of (eu, 2)
  }
  EXPECT_EQ(scalar(db_, "SELECT string_agg(region || id || '=' || payload, ' ' ORDER BY region, id) FROM t"),
            "eu1=eu-1 us1=us-1b");
  EXPECT_EQ(scalar(db_, "SELECT string_agg(region || id, ' ') FROM t__skippr_tombstones"), "eu2");
}

TEST_F(DuckDbMerge, ReplayingABatchWithDeletesDoesNothingEvenAfterReopening) {
  const Batch batch = concat({change(1, "insert", big_token(1), "one"), change(2, "insert", big_token(1), "two"),
                              change(2, "delete", big_token(2), "")});
  {
    auto sink = make_sink(db_);
    ASSERT_EQ(sink->write(batch, BatchId{"p", 1, 1}).value(), WriteOutcome::kApplied);
    // Between the landing and its replay, key 2 comes back with a newer change and key 1 is deleted.
    ASSERT_EQ(
        sink->write(concat({change(2, "insert", big_token(3), "two-again"), change(1, "delete", big_token(3), "")}),
                    BatchId{"p", 1, 2})
            .value(),
        WriteOutcome::kApplied);
  }
  const auto before = content(db_);
  const auto tombstones_before = scalar(db_,
                                        "SELECT string_agg(id || '@' || _skippr_order, ' ' ORDER BY id) FROM "
                                        "t__skippr_tombstones");
  EXPECT_EQ(before, "2=two-again");
  {
    auto sink = make_sink(db_);
    ASSERT_EQ(sink->write(batch, BatchId{"p", 1, 1}).value(), WriteOutcome::kAlreadyApplied);
  }
  EXPECT_EQ(content(db_), before);
  EXPECT_EQ(scalar(db_, "SELECT string_agg(id || '@' || _skippr_order, ' ' ORDER BY id) FROM t__skippr_tombstones"),
            tombstones_before);
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM _skippr_batches"), "2");
}

TEST_F(DuckDbMerge, ANewFieldMidStreamBecomesANullableColumnAndAnUpdateKeepsColumnsItLacks) {
  {
    auto sink = make_sink(db_);
    apply(*sink, testing::simple_batch(2, 1));  // id, x, name
    Batch wider = testing::simple_batch(2, 2);  // updates 2, inserts 3, with a new field
    wider.add_column({"extra", Type::kString});
    wider.columns[3] = Column(Type::kString);
    wider.columns[3].append_string("e2");
    wider.columns[3].append_string("e3");
    apply(*sink, wider);
    Batch narrower;  // id only plus x: name and extra of id 1 stay as they are
    narrower.add_column({"ID", Type::kInt64});
    narrower.add_column({"x", Type::kDouble});
    narrower.columns[0].append_int(1);
    narrower.columns[1].append_double(99);
    narrower.rows = 1;
    apply(*sink, narrower);
  }
  EXPECT_EQ(scalar(db_,
                   "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
                   "WHERE table_name = 't'"),
            "id,x,name,_skippr_order,extra");
  auto rows = read_db(db_, "SELECT id::VARCHAR, x::VARCHAR, name, extra FROM t ORDER BY id");
  EXPECT_EQ(rows.rows,
            (std::vector<Row>{
                {"1", "99.0", "name-1", std::nullopt}, {"2", "1.0", "name-2", "e2"}, {"3", "1.5", "name-3", "e3"}}));
}

// A value that does not fit its column's type never blocks the pipeline: its row goes to the rejects table with
// the shared sentence, in the batch's transaction, and the merge goes on with the rest.
TEST_F(DuckDbMerge, AValueThatDoesNotFitItsColumnIsRejectedWithTheSharedSentence) {
  auto sink = make_sink(db_);
  apply(*sink, testing::simple_batch(1, 1));
  Batch changed = change(1, "update", "5", "p");
  changed.columns[1] = Column(Type::kString);
  changed.columns[1].append_string("p");
  changed.schema.fields[1].name = "x";  // x is DOUBLE in the table
  auto outcome = sink->write(changed, BatchId{"p", 1, 2});
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 1u);
  const std::string reason = read_db(db_, "SELECT reason FROM t__skippr_rejected").rows.at(0).at(0).value_or("");
  EXPECT_NE(reason.find("field \"x\" is string but column \"x\" is DOUBLE"), std::string::npos) << reason;
  EXPECT_EQ(read_db(db_, "SELECT batch_id || ' ' || \"row\" FROM t__skippr_rejected").rows.at(0).at(0).value_or(""),
            "p/1/2 0");
}

TEST_F(DuckDbMerge, AUsersTableWithAPrimaryKeyTakesUpdatesDeletesAndReinserts) {
  read_db(db_, "CREATE TABLE t (id BIGINT PRIMARY KEY, payload VARCHAR)");  // the ART index the sink never creates
  {
    auto sink = make_sink(db_);
    apply(*sink, concat({change(1, "insert", "1", "a"), change(2, "insert", "1", "b")}));
    apply(*sink, concat({change(1, "update", "2", "a2"), change(2, "delete", "2", "")}));
    apply(*sink, concat({change(2, "insert", "3", "b3"), change(3, "insert", "3", "c")}));
  }
  EXPECT_EQ(content(db_), "1=a2 2=b3 3=c");
}

// ---- bad configuration and bad change fields ----

TEST(DuckDbMergeConfig, MergeByKeyWithoutAPrimaryKeyIsAConfigError) {
  TempDir dir;
  auto sink = try_make_sink(dir.path() / "out.duckdb", "t", {});
  ASSERT_FALSE(sink);
  EXPECT_EQ(sink.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(sink.error().message, "sink 'warehouse': merge_by_key needs the pipeline's primary_key; add it");
}

TEST(DuckDbMergeConfig, ATargetWithoutAKeyColumnIsAConfigErrorAtOpen) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  read_db(db, "CREATE TABLE trips (id BIGINT, name VARCHAR)");
  auto sink = make_sink(db, {"trip_id"}, "trips");
  auto opened = sink->open();
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind, ErrorKind::kConfig);
  EXPECT_EQ(opened.error().message,
            fmt::format("DuckDB table \"trips\" in {} has no column \"trip_id\" named in the pipeline's primary_key; "
                        "fix primary_key or the table",
                        db.string()));
}

TEST(DuckDbMergeConfig, ABatchWithoutTheKeyFieldIsAConfigErrorAndLandsNothing) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, {"trip_id"});
    auto outcome = sink->write(testing::simple_batch(2), BatchId{"p", 1, 1});
    ASSERT_FALSE(outcome);
    EXPECT_EQ(outcome.error().kind, ErrorKind::kConfig);
    EXPECT_NE(outcome.error().message.find("the batch has no field \"trip_id\" named in the pipeline's primary_key"),
              std::string::npos)
        << outcome.error().message;
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM information_schema.tables WHERE table_name = 't'"), "0");
}

TEST(DuckDbMergeConfig, BadChangeFieldsAndNullKeysAreBadInputNamingFieldAndRow) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  struct Case {
    Batch batch;
    std::string message;
  };
  Batch null_key = change(1, "insert", "1", "a");
  ASSERT_TRUE(null_key.append(change(2, "insert", "1", "b")));
  null_key.columns[0] = Column(Type::kInt64);
  null_key.columns[0].append_int(1);
  null_key.columns[0].append_null();
  auto sink = make_sink(db);
  ASSERT_TRUE(sink->open());
  std::vector<Case> cases;
  cases.push_back({concat({change(1, "insert", "1", "a"), change(1, "remove", "2", "")}),
                   "field \"_skippr_op\" in row 1 is 'remove'; it must be insert, update, delete, truncate or null"});
  cases.push_back({change(1, "insert", "12a", "a"),
                   "field \"_skippr_order\" in row 0 is '12a'; it must be a "
                   "non-negative decimal integer"});
  cases.push_back({change(1, "insert", "-5", "a"), "field \"_skippr_order\" in row 0 is '-5'"});
  cases.push_back({change(1, "insert", std::string(39, '9'), "a"), "of at most 38 digits"});
  cases.push_back({std::move(null_key), "field \"id\" in row 1 is null, but it is part of the primary_key"});
  for (const auto& c : cases) {
    auto outcome = sink->write(c.batch, BatchId{"p", 1, 1});
    ASSERT_FALSE(outcome) << c.message;
    EXPECT_EQ(outcome.error().kind, ErrorKind::kBadInput) << c.message;
    EXPECT_NE(outcome.error().message.find(c.message), std::string::npos) << outcome.error().message;
  }
  sink.reset();
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM _skippr_batches"), "0");
}

// ---- one transaction ----

TEST_F(DuckDbMerge, AFailureBeforeCommitRollsBackRowsTombstonesAndStagingAndTheRetryLands) {
  auto sink = make_sink(db_);
  apply(*sink, concat({change(1, "insert", "1", "one"), change(2, "insert", "1", "two")}));
  const Batch batch = concat({change(1, "update", "2", "one-b"), change(2, "delete", "2", "")});
  {
    failpoint::set_handler([](std::string_view name) {
      if (name == failpoint::kSinkInTransaction) throw std::runtime_error("injected failure before commit");
    });
    EXPECT_THROW((void)sink->write(batch, BatchId{"p", 1, 2}), std::runtime_error);
    failpoint::set_handler(nullptr);
  }
  sink.reset();
  EXPECT_EQ(content(db_), "1=one 2=two");
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM t__skippr_tombstones"), "0");
  sink = make_sink(db_);
  // Same connection state as a retry in the same process would have: the temp tables must be gone too.
  ASSERT_EQ(sink->write(batch, BatchId{"p", 1, 2}).value(), WriteOutcome::kApplied);
  sink.reset();
  EXPECT_EQ(content(db_), "1=one-b");
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM t__skippr_tombstones"), "1");
}

TEST_F(DuckDbMerge, ARetryOnTheSameConnectionAfterARollbackFindsNoStagingLeft) {
  auto sink = make_sink(db_);
  failpoint::set_handler([](std::string_view name) {
    if (name == failpoint::kSinkInTransaction) throw std::runtime_error("injected failure before commit");
  });
  EXPECT_THROW((void)sink->write(testing::simple_batch(5), BatchId{"p", 1, 1}), std::runtime_error);
  failpoint::set_handler(nullptr);
  auto retry = sink->write(testing::simple_batch(5), BatchId{"p", 1, 1});
  ASSERT_TRUE(retry) << retry.error().message;
  EXPECT_EQ(*retry, WriteOutcome::kApplied);
}

// kill -9 between the MERGE and COMMIT (no rollback, no close): DuckDB's recovery shows the table as before the
// batch, and the retry of the same BatchId lands it once.
TEST_F(DuckDbMerge, ACrashBeforeCommitLeavesTheTableAsItWasAndTheRetryLandsOnce) {
  {
    auto sink = make_sink(db_);
    apply(*sink, testing::simple_batch(200000));  // ids 0..199999
  }
  // Updates ids 100000..199999 (new names) and inserts 200000..399999: large enough for optimistic writes.
  Batch second = testing::simple_batch(300000, 100000);
  second.columns[2] = Column(Type::kString);
  for (int64_t id = 100000; id < 400000; ++id) second.columns[2].append_string(fmt::format("second-{}", id));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    failpoint::set_handler([](std::string_view name) {
      if (name == failpoint::kSinkInTransaction) _exit(42);
    });
    auto sink = make_sink(db_);
    (void)sink->write(second, BatchId{"p", 1, 2});
    _exit(1);  // the failpoint was not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 42);

  const std::string summary =
      "SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || sum(id) || ' ' || count(*) FILTER (name = 'name-' || "
      "id) || ' ' || count(*) FILTER (name = 'second-' || id) FROM t";
  EXPECT_EQ(scalar(db_, summary), fmt::format("200000 200000 {} 200000 0", 199999LL * 200000 / 2));
  EXPECT_EQ(scalar(db_, "SELECT count(*) FROM _skippr_batches"), "1");
  {
    auto sink = make_sink(db_);
    ASSERT_EQ(sink->write(second, BatchId{"p", 1, 2}).value(), WriteOutcome::kApplied);
    ASSERT_EQ(sink->write(second, BatchId{"p", 1, 2}).value(), WriteOutcome::kAlreadyApplied);
  }
  EXPECT_EQ(scalar(db_, summary), fmt::format("400000 400000 {} 100000 300000", 399999LL * 400000 / 2));
}

// ---- throughput (prints, never asserts a time) ----

TEST_F(DuckDbMerge, MillionRowsThroughput) {
  constexpr size_t kRows = 1'000'000, kBatchRows = 65'536;
  std::vector<Batch> batches;
  for (size_t first = 0; first < kRows; first += kBatchRows) {
    batches.push_back(testing::simple_batch(std::min(kBatchRows, kRows - first), static_cast<int64_t>(first)));
  }
  {
    auto sink = make_sink(db_);
    ASSERT_TRUE(sink->open());
    auto start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) apply(*sink, batch);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ perf     ] DuckDB merge_by_key, new keys: %zu rows in %.3f s = %.0f rows/s\n", kRows, seconds,
                kRows / seconds);
    // The same keys again: every row is an update of an older one.
    start = std::chrono::steady_clock::now();
    for (const auto& batch : batches) apply(*sink, batch);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ perf     ] DuckDB merge_by_key, updates:  %zu rows in %.3f s = %.0f rows/s\n", kRows, seconds,
                kRows / seconds);
  }
  EXPECT_EQ(scalar(db_,
                   "SELECT count(*)::VARCHAR || ' ' || count(DISTINCT id)::VARCHAR || ' ' || sum(id)::VARCHAR FROM t "
                   "WHERE name = 'name-' || id"),
            fmt::format("{} {} {}", kRows, kRows, kRows * (kRows - 1) / 2));
  // Every row carries a token of the second pass.
  EXPECT_EQ(scalar(db_, fmt::format("SELECT count(*) FROM t WHERE _skippr_order < {}",
                                    derived_token(1, batches.size() + 1, 0))),
            "0");
}

}  // namespace
}  // namespace skippr
