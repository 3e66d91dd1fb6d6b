#include "sinks/duckdb/duckdb_sink.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include "clients/duckdb/duckdb_client.h"
#include "core/failpoint.h"
#include "sink_test_util.h"

namespace skippr {
namespace {

using testing::read_db;
using testing::scalar;
using testing::TempDir;

std::unique_ptr<Sink> make_sink(const std::filesystem::path& path, const std::string& table,
                                Landing landing = Landing::kAppend) {
  ConnectorContext ctx;
  ctx.name = "warehouse";
  ctx.pipeline = "p";
  ctx.params = {{"path", path.string()}, {"table", table}};
  ctx.landing = landing;
  auto sink = duckdb_sink_spec().make_sink(ctx);
  EXPECT_TRUE(sink) << sink.error().message;
  return sink ? std::move(*sink) : nullptr;
}

using Row = std::vector<std::optional<std::string>>;

TEST(DuckDbSink, EveryTypeAndNullRoundTripsWithItsLedgerRow) {
  TempDir dir;
  const auto db = dir.path() / "nested" / "folder" / "out.duckdb";  // parent folders are created
  {
    auto sink = make_sink(db, "events");
    ASSERT_TRUE(sink->open());
    EXPECT_EQ(sink->guarantee(), Guarantee::kExactlyOnce);
    auto outcome = sink->write(testing::every_type_batch(), BatchId{"p", 1, 1});
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(*outcome, WriteOutcome::kApplied);
  }
  auto types = read_db(db,
                       "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'events' "
                       "ORDER BY ordinal_position");
  std::vector<Row> expected_types = {{"b", "BOOLEAN"}, {"i", "BIGINT"}, {"d", "DOUBLE"},
                                     {"s", "VARCHAR"}, {"bin", "BLOB"}, {"ts", "TIMESTAMP WITH TIME ZONE"},
                                     {"day", "DATE"},  {"j", "JSON"}};
  EXPECT_EQ(types.rows, expected_types);

  auto rows = read_db(db,
                      "SELECT b::VARCHAR, i::VARCHAR, d = 3.25 OR d = -1e-300, s, hex(bin), epoch_us(ts)::VARCHAR, "
                      "day::VARCHAR, j::VARCHAR FROM events ORDER BY i NULLS LAST");
  ASSERT_EQ(rows.rows.size(), 3u);
  EXPECT_EQ(rows.rows[0], (Row{"true", "-42", "true", "h\u00e9llo \"quoted\"\n", "0001FF", "1704164645123456",
                               "2024-01-02", R"({"a":[1,2,{"b":null}]})"}));
  EXPECT_EQ(rows.rows[1], (Row{"false", "9007199254740993", "true", "", "", "-1", "1969-12-31", "42"}));
  EXPECT_EQ(rows.rows[2], Row(8, std::nullopt));
  EXPECT_EQ(scalar(db, "SELECT d FROM events WHERE i = 9007199254740993"), "-1e-300");

  auto ledger = read_db(db,
                        "SELECT batch_id, pipeline, epoch::VARCHAR, seq::VARCHAR, target_table, \"rows\"::VARCHAR, "
                        "landed_at IS NOT NULL FROM _skippr_batches");
  EXPECT_EQ(ledger.rows, (std::vector<Row>{{"p/1/1", "p", "1", "1", "events", "3", "true"}}));
}

TEST(DuckDbSink, TheSameBatchIdIsAppliedOnceEvenAfterReopening) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    ASSERT_EQ(sink->write(testing::simple_batch(10), BatchId{"p", 1, 7}).value(), WriteOutcome::kApplied);
    ASSERT_EQ(sink->write(testing::simple_batch(10), BatchId{"p", 1, 7}).value(), WriteOutcome::kAlreadyApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "10");
  {
    // A new process would have no local memory of the batch: the ledger in the file decides.
    auto sink = make_sink(db, "t");
    ASSERT_EQ(sink->write(testing::simple_batch(10), BatchId{"p", 1, 7}).value(), WriteOutcome::kAlreadyApplied);
    // After RESET the epoch changes: the same sequence number is a new batch.
    ASSERT_EQ(sink->write(testing::simple_batch(10), BatchId{"p", 2, 7}).value(), WriteOutcome::kApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "20");
  EXPECT_EQ(scalar(db, "SELECT string_agg(batch_id, ',' ORDER BY batch_id) FROM _skippr_batches"), "p/1/7,p/2/7");
}

TEST(DuckDbSink, NewFieldsBecomeNullableColumnsAndMissingOnesLandAsNull) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    ASSERT_TRUE(sink->write(testing::simple_batch(3), BatchId{"p", 1, 1}));

    Batch wider = testing::simple_batch(2, 100);
    wider.add_column({"extra", Type::kString});  // null for both rows...
    wider.columns[3] = Column(Type::kString);
    wider.columns[3].append_string("e100");  // ...then real values
    wider.columns[3].append_null();
    ASSERT_TRUE(sink->write(wider, BatchId{"p", 1, 2}));

    Batch narrower;  // only `id`, and spelled in capitals: DuckDB's names are case-insensitive
    narrower.add_column({"ID", Type::kInt64});
    narrower.columns[0].append_int(200);
    narrower.rows = 1;
    auto outcome = sink->write(narrower, BatchId{"p", 1, 3});
    ASSERT_TRUE(outcome) << outcome.error().message;
  }
  EXPECT_EQ(scalar(db,
                   "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
                   "WHERE table_name = 't'"),
            "id,x,name,extra");
  auto rows = read_db(db, "SELECT id::VARCHAR, name, extra FROM t ORDER BY id");
  EXPECT_EQ(rows.rows, (std::vector<Row>{{"0", "name-0", std::nullopt},
                                         {"1", "name-1", std::nullopt},
                                         {"2", "name-2", std::nullopt},
                                         {"100", "name-100", "e100"},
                                         {"101", "name-101", std::nullopt},
                                         {"200", std::nullopt, std::nullopt}}));
}

// A string arriving for a BIGINT column: a whole decimal integer is converted, anything else is rejected with its
// reason into t__skippr_rejected, in the same transaction; the batch lands and nothing waits in the WAL.
TEST(DuckDbSink, AValueOfAnotherTypeIsConvertedOrItsRowRejectedAndTheBatchLands) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    ASSERT_TRUE(sink->write(testing::simple_batch(3), BatchId{"p", 1, 1}));

    Batch changed;
    changed.add_column({"brand_new", Type::kInt64});
    changed.add_column({"id", Type::kString});
    for (const char* id : {"7", "not a number", "-8"}) {
      changed.columns[0].append_int(1);
      changed.columns[1].append_string(id);
      ++changed.rows;
    }
    auto outcome = sink->write(changed, BatchId{"p", 1, 2});
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(sink->rows_rejected_by_last_write(), 1u);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "5");
  EXPECT_EQ(scalar(db, "SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM t WHERE brand_new = 1"), "-8,7");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t__skippr_rejected"), "1");
  const std::string reason = scalar(db, "SELECT reason FROM t__skippr_rejected");
  EXPECT_NE(reason.find("field \"id\" is string but column \"id\" is BIGINT"), std::string::npos) << reason;
  EXPECT_NE(reason.find((dir.path() / "out.duckdb").string()), std::string::npos) << reason;
  EXPECT_EQ(scalar(db, "SELECT record FROM t__skippr_rejected"), "{\"brand_new\":1,\"id\":\"not a number\"}");
  EXPECT_EQ(scalar(db, "SELECT \"rows\" FROM _skippr_batches WHERE seq = 2"), "2");
}

// Text that is not UTF-8 rejects its row (it used to fail the whole batch on every retry); the rest lands.
TEST(DuckDbSink, InvalidUtf8RejectsItsRowAndTheRestLands) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    Batch b = testing::simple_batch(3);
    b.columns[2] = Column(Type::kString);
    b.columns[2].append_string("ok");
    b.columns[2].append_string("caf\xc3");  // a character cut in half
    b.columns[2].append_string("\xa9 ok");  // ...and its rest: the buffer as a whole is valid UTF-8
    auto outcome = sink->write(b, BatchId{"p", 1, 1});
    ASSERT_TRUE(outcome) << outcome.error().message;
    EXPECT_EQ(sink->rows_rejected_by_last_write(), 2u);
  }
  EXPECT_EQ(scalar(db, "SELECT string_agg(name, ',') FROM t"), "ok");
  EXPECT_EQ(scalar(db, "SELECT string_agg(\"row\"::VARCHAR, ',' ORDER BY \"row\") FROM t__skippr_rejected"), "1,2");
  EXPECT_NE(
      scalar(db, "SELECT min(reason) FROM t__skippr_rejected").find("field \"name\": the value is not valid UTF-8"),
      std::string::npos);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM _skippr_batches"), "1");
}

TEST(DuckDbSink, IdentifiersAreQuoted) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  Batch b;
  b.add_column({"sel\"ect", Type::kString});
  b.columns[0].append_string("x");
  b.rows = 1;
  {
    auto sink = make_sink(db, "we\"ird table");
    auto outcome = sink->write(b, BatchId{"it's", 1, 1});
    ASSERT_TRUE(outcome) << outcome.error().message;
  }
  EXPECT_EQ(scalar(db, R"(SELECT "sel""ect" FROM "we""ird table")"), "x");
  EXPECT_EQ(scalar(db, "SELECT batch_id FROM _skippr_batches"), "it's/1/1");
}

TEST(DuckDbSink, EveryLandingIsAvailable) {
  for (Landing landing : {Landing::kAppend, Landing::kMergeByKey, Landing::kReplacePartition, Landing::kReplaceTable}) {
    ConnectorContext ctx;
    ctx.name = "warehouse";
    ctx.params = {{"path", "/tmp/x.duckdb"}, {"table", "t"}};
    ctx.landing = landing;
    ctx.primary_key = {"id"};
    ctx.partition_by = {"day"};
    auto sink = duckdb_sink_spec().make_sink(ctx);
    EXPECT_TRUE(sink) << to_string(landing) << ": " << sink.error().message;
  }
}

// ---- transaction scope ----

// The measurement behind the sink's design: rows from the C API appender become part of the connection's open
// transaction when the appender is closed, so a ROLLBACK takes them back. (If this failed, the sink would need a
// TEMP staging table and INSERT ... SELECT inside the transaction.)
TEST(DuckDbSink, AppenderRowsBelongToTheOpenTransaction) {
  TempDir dir;
  auto db = DuckDbDatabase::open((dir.path() / "a.duckdb").string());
  ASSERT_TRUE(db);
  auto conn = DuckDbConnection::connect(*db);
  ASSERT_TRUE(conn);
  ASSERT_TRUE(conn->execute("CREATE TABLE t (v BIGINT)"));
  {
    auto tx = DuckDbTransaction::begin(*conn);
    ASSERT_TRUE(tx);
    auto appender = DuckDbAppender::create(*conn, "t");
    ASSERT_TRUE(appender);
    duckdb_logical_type type = appender->column_type(0);
    duckdb_data_chunk chunk = duckdb_create_data_chunk(&type, 1);
    duckdb_destroy_logical_type(&type);
    auto* values = static_cast<int64_t*>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 0)));
    for (int i = 0; i < 100; ++i) values[i] = i;
    duckdb_data_chunk_set_size(chunk, 100);
    ASSERT_TRUE(appender->append(chunk));
    ASSERT_TRUE(appender->close());
    duckdb_destroy_data_chunk(&chunk);
    EXPECT_EQ(conn->query("SELECT count(*) FROM t")->rows[0][0], "100");  // visible inside the transaction
    tx->rollback();
  }
  EXPECT_EQ(conn->query("SELECT count(*) FROM t")->rows[0][0], "0");
}

void throw_in_transaction(std::string_view name) {
  if (name == failpoint::kSinkInTransaction) throw std::runtime_error("injected failure between append and commit");
}

struct FailpointReset {
  ~FailpointReset() { failpoint::set_handler(nullptr); }
};

TEST(DuckDbSink, RolledBackTransactionLeavesNoRowsAndNoLedgerRow) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    ASSERT_TRUE(sink->write(testing::simple_batch(5), BatchId{"p", 1, 1}));
    {
      FailpointReset reset;
      failpoint::set_handler(throw_in_transaction);
      // Rows are appended and the failpoint sits right before the ledger row and COMMIT.
      EXPECT_THROW((void)sink->write(testing::simple_batch(200000, 1000), BatchId{"p", 1, 2}), std::runtime_error);
    }
    // A brand-new table is rolled back too.
    {
      auto other = make_sink(dir.path() / "other.duckdb", "fresh");
      FailpointReset reset;
      failpoint::set_handler(throw_in_transaction);
      EXPECT_THROW((void)other->write(testing::simple_batch(5), BatchId{"p", 1, 1}), std::runtime_error);
    }
    EXPECT_EQ(scalar(dir.path() / "other.duckdb",
                     "SELECT count(*) FROM information_schema.tables WHERE "
                     "table_name = 'fresh'"),
              "0");
    // The connection is usable after the rollback, and the retry of the same BatchId lands.
    auto retry = sink->write(testing::simple_batch(200000, 1000), BatchId{"p", 1, 2});
    ASSERT_TRUE(retry) << retry.error().message;
    EXPECT_EQ(*retry, WriteOutcome::kApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "200005");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM _skippr_batches"), "2");
}

// A crash (no rollback, no close) between append and commit: DuckDB's recovery must show neither rows nor ledger row.
TEST(DuckDbSink, CrashBeforeCommitLeavesNothing) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  {
    auto sink = make_sink(db, "t");
    ASSERT_TRUE(sink->write(testing::simple_batch(5), BatchId{"p", 1, 1}));
  }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    failpoint::set_handler([](std::string_view name) {
      if (name == failpoint::kSinkInTransaction) _exit(42);
    });
    auto sink = make_sink(db, "t");
    // Large enough for DuckDB to write row groups to the file before COMMIT (optimistic writes).
    (void)sink->write(testing::simple_batch(500000, 1000), BatchId{"p", 1, 2});
    _exit(1);  // the failpoint was not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 42);

  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "5");
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM _skippr_batches"), "1");
  {
    auto sink = make_sink(db, "t");
    ASSERT_EQ(sink->write(testing::simple_batch(500000, 1000), BatchId{"p", 1, 2}).value(), WriteOutcome::kApplied);
  }
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "500005");
}

// ---- another process holds the file ----

TEST(DuckDbSink, OpenIsUnavailableWhileAnotherProcessHoldsTheFile) {
  TempDir dir;
  const auto db = dir.path() / "held.duckdb";
  int ready[2], release[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    close(release[1]);
    auto holder = DuckDbDatabase::open(db.string());
    char byte = holder ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    (void)!::read(release[0], &byte, 1);  // returns when the parent closes its end
    _exit(holder ? 0 : 1);
  }
  close(ready[1]);
  close(release[0]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ASSERT_EQ(byte, 'y');

  auto sink = make_sink(db, "t");
  auto opened = sink->open();
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind, ErrorKind::kUnavailable);
  const auto& message = opened.error().message;
  EXPECT_NE(message.find(db.string()), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("PID {}", child)), std::string::npos) << message;
  // write() opens on demand and reports the same definite, retryable failure.
  auto written = sink->write(testing::simple_batch(1), BatchId{"p", 1, 1});
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().kind, ErrorKind::kUnavailable);

  close(release[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  close(ready[0]);

  auto reopened = sink->open();
  ASSERT_TRUE(reopened) << reopened.error().message;
  EXPECT_EQ(sink->write(testing::simple_batch(1), BatchId{"p", 1, 1}).value(), WriteOutcome::kApplied);
}

// ---- throughput sanity (prints, never asserts a time) ----

TEST(DuckDbSink, MillionRowsThroughput) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  constexpr size_t kRows = 1'000'000, kBatchRows = 100'000;
  std::vector<Batch> batches;
  for (size_t first = 0; first < kRows; first += kBatchRows) {
    batches.push_back(testing::simple_batch(kBatchRows, static_cast<int64_t>(first)));
  }
  {
    auto sink = make_sink(db, "t");
    ASSERT_TRUE(sink->open());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < batches.size(); ++i) {
      ASSERT_EQ(sink->write(batches[i], BatchId{"p", 1, i}).value(), WriteOutcome::kApplied);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("[ perf     ] DuckDB sink: %zu rows (int64, double, string) in %.3f s = %.0f rows/s\n", kRows, seconds,
                kRows / seconds);
  }
  EXPECT_EQ(scalar(db,
                   "SELECT count(*)::VARCHAR || ' ' || sum(id)::VARCHAR || ' ' || count(DISTINCT name)::VARCHAR "
                   "FROM t WHERE x = id / 2"),
            fmt::format("{} {} {}", kRows, kRows * (kRows - 1) / 2, kRows));
}

}  // namespace
}  // namespace skippr

namespace skippr {
namespace {

// An integer into a DOUBLE column converts only while a double holds it exactly (|v| <= 2^53); beyond, the row is
// rejected rather than rounded.
TEST(DuckDbSink, AnIntegerADoubleCannotHoldExactlyIsRejectedNotRounded) {
  TempDir dir;
  const auto db = dir.path() / "out.duckdb";
  auto sink = make_sink(db, "t");
  Batch first;
  first.add_column({"v", Type::kDouble});
  first.columns[0].append_double(0.5);
  first.rows = 1;
  ASSERT_TRUE(sink->write(first, BatchId{"p", 1, 1}));
  Batch ints;
  ints.add_column({"v", Type::kInt64});
  ints.columns[0].append_int(int64_t{1} << 53);
  ints.columns[0].append_int((int64_t{1} << 53) + 1);
  ints.rows = 2;
  ASSERT_TRUE(sink->write(ints, BatchId{"p", 1, 2}));
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 1u);
  EXPECT_EQ(scalar(db, "SELECT count(*) FROM t"), "2");
  EXPECT_EQ(scalar(db, "SELECT record FROM t__skippr_rejected"), "{\"v\":9007199254740993}");
}

}  // namespace
}  // namespace skippr
