// The Postgres sink against a real PostgreSQL 15 (started by the test binary): types, the ledger, additive evolution,
// type changes, and merge_by_key's order tokens and tombstones.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "core/connector.h"
#include "sinks/postgres/postgres_sink.h"
#include "sinks/sink_test_util.h"
#include "support/postgres_server.h"

namespace skippr {
namespace {

using test::SharedPostgres;

std::unique_ptr<Sink> make_sink(const std::string& database, const std::string& table,
                                Landing landing = Landing::kAppend, std::vector<std::string> key = {}) {
  ConnectorContext ctx;
  ctx.name = "pg";
  ctx.pipeline = "p";
  ctx.params = {{"dsn", SharedPostgres().uri(database)}, {"schema", "landing"}, {"table", table}};
  ctx.landing = landing;
  ctx.primary_key = std::move(key);
  auto sink = postgres_sink_spec().make_sink(ctx);
  EXPECT_TRUE(sink) << sink.error().message;
  auto opened = (*sink)->open();
  EXPECT_TRUE(opened) << opened.error().message;
  return std::move(*sink);
}

BatchId batch_id(uint64_t seq, uint64_t epoch = 1) { return BatchId{"p", epoch, seq}; }

std::string value(const std::string& db, const std::string& sql) { return SharedPostgres().value(db, sql); }

TEST(PostgresSink, EveryTypeRoundTripsExactlyAndARetryOfTheSameBatchDoesNothing) {
  const auto db = SharedPostgres().create_database("types");
  auto sink = make_sink(db, "t");
  const Batch batch = testing::every_type_batch();
  auto first = sink->write(batch, batch_id(1));
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, WriteOutcome::kApplied);
  auto again = sink->write(batch, batch_id(1));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, WriteOutcome::kAlreadyApplied);
  // A new sink (a restarted process) decides from the ledger in the database, not from memory.
  auto restarted = make_sink(db, "t")->write(batch, batch_id(1));
  ASSERT_TRUE(restarted);
  EXPECT_EQ(*restarted, WriteOutcome::kAlreadyApplied);
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t"), "3");
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing._skippr_batches WHERE batch_id = 'p/1/1'"), "1");

  EXPECT_EQ(value(db,
                  "SELECT string_agg(format_type(atttypid, atttypmod), ',' ORDER BY attnum) FROM pg_attribute "
                  "WHERE attrelid = 'landing.t'::regclass AND attnum > 0"),
            "boolean,bigint,double precision,text,bytea,timestamp with time zone,date,jsonb");
  SharedPostgres().execute(db, "SET TIME ZONE 'UTC'");
  auto rows = SharedPostgres().query(
      db,
      "SET TIME ZONE 'UTC'; SELECT b::text, i::text, d::text, s, encode(bin, 'hex'), ts::text, day::text, j::text "
      "FROM landing.t ORDER BY i NULLS LAST");
  ASSERT_EQ(rows.size(), 3u);
  using R = std::vector<std::optional<std::string>>;
  EXPECT_EQ(rows[0], (R{"true", "-42", "3.25", "h\u00e9llo \"quoted\"\n", "0001ff", "2024-01-02 03:04:05.123456+00",
                        "2024-01-02", R"({"a": [1, 2, {"b": null}]})"}));
  EXPECT_EQ(rows[1],
            (R{"false", "9007199254740993", "-1e-300", "", "", "1969-12-31 23:59:59.999999+00", "1969-12-31", "42"}));
  EXPECT_EQ(rows[2], (R(8, std::nullopt)));
}

// A column the batch does not have gets its default.
TEST(PostgresSink, ExistingColumnsOfNarrowerOrExactTypesTakeTheFieldsThroughACast) {
  const auto db = SharedPostgres().create_database("cast");
  SharedPostgres().execute(db,
                           "CREATE SCHEMA landing; CREATE TABLE landing.t (id integer, x numeric(10,2), name "
                           "varchar(20), extra text DEFAULT 'kept')");
  auto sink = make_sink(db, "t");
  auto outcome = sink->write(testing::simple_batch(5, 1), batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(value(db,
                  "SELECT string_agg(id || ':' || x || ':' || name || ':' || coalesce(extra, 'null'), ' ' "
                  "ORDER BY id) FROM landing.t"),
            "1:0.50:name-1:kept 2:1.00:name-2:kept 3:1.50:name-3:kept 4:2.00:name-4:kept 5:2.50:name-5:kept");
}

TEST(PostgresSink, ANewFieldBecomesANewNullableColumn) {
  const auto db = SharedPostgres().create_database("evolve");
  auto sink = make_sink(db, "t");
  ASSERT_TRUE(sink->write(testing::simple_batch(2, 1), batch_id(1)));
  Batch wider = testing::simple_batch(1, 3);
  wider.add_column({"flag", Type::kBool});
  wider.columns.back().validity.clear();
  wider.columns.back().fixed.clear();
  wider.columns.back().append_bool(true);
  auto outcome = sink->write(wider, batch_id(2));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(value(db, "SELECT string_agg(id || '=' || coalesce(flag::text, 'null'), ' ' ORDER BY id) FROM landing.t"),
            "1=null 2=null 3=true");
}

// Values a column's type cannot take go, row by row, to <table>__skippr_rejected in the batch's transaction: the
// batch lands (and is in the ledger), nothing waits in the WAL for a fix that no retry can bring.
TEST(PostgresSink, ValuesTheColumnsCannotTakeGoToTheRejectsTableAndTheBatchLands) {
  const auto db = SharedPostgres().create_database("typechange");
  SharedPostgres().execute(db, "CREATE SCHEMA landing; CREATE TABLE landing.t (id integer, x numeric, name bytea)");
  auto sink = make_sink(db, "t");
  auto outcome = sink->write(testing::simple_batch(3, 1), batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(*outcome, WriteOutcome::kApplied);
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 3u);
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t"), "0");
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t__skippr_rejected"), "3");
  // The same sentence as the DuckDB sink's (sinks/kit/conform_batch.h), and the record as JSON.
  const std::string reason = value(db, "SELECT reason FROM landing.t__skippr_rejected WHERE \"row\" = 0");
  EXPECT_NE(reason.find("field \"name\" is string but column \"name\" is bytea"), std::string::npos) << reason;
  EXPECT_NE(value(db, "SELECT record FROM landing.t__skippr_rejected WHERE \"row\" = 0").find("\"id\":1"),
            std::string::npos);
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing._skippr_batches"), "1");
  // A replay is recognised: no second copy of the rejects.
  EXPECT_EQ(*sink->write(testing::simple_batch(3, 1), batch_id(1)), WriteOutcome::kAlreadyApplied);
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t__skippr_rejected"), "3");
}

// A value too large for a smallint column is rejected with its row (it used to fail the whole batch on every
// retry, 22003); the rows that fit land in the same transaction.
TEST(PostgresSink, AValueTooLargeForAnIntegerColumnIsRejectedAndTheRestLands) {
  const auto db = SharedPostgres().create_database("range");
  SharedPostgres().execute(db, "CREATE SCHEMA landing; CREATE TABLE landing.t (id smallint, x float8, name text)");
  auto sink = make_sink(db, "t");
  auto outcome = sink->write(testing::simple_batch(3, 32766), batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 1u);
  EXPECT_EQ(value(db, "SELECT string_agg(id::text, ',' ORDER BY id) FROM landing.t"), "32766,32767");
  EXPECT_NE(value(db, "SELECT reason FROM landing.t__skippr_rejected").find("column \"id\" is smallint"),
            std::string::npos);
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing._skippr_batches"), "1");
}

// Text PostgreSQL cannot hold (a NUL character; \u0000 in a jsonb value) rejects its row with the reason instead of
// failing the batch on every retry; the other rows land, and the NUL survives, escaped, in the rejects' record.
TEST(PostgresSink, ANulCharacterInTextIsRejectedAndTheRestLands) {
  const auto db = SharedPostgres().create_database("nul");
  Batch batch;
  batch.add_column({"id", Type::kInt64});
  batch.add_column({"name", Type::kString});
  batch.add_column({"doc", Type::kJson});
  auto row = [&](int64_t id, std::string_view name, std::string_view doc) {
    batch.columns[0].append_int(id);
    batch.columns[1].append_string(name);
    batch.columns[2].append_string(doc);
    ++batch.rows;
  };
  row(1, "plain", R"({"a":1})");
  row(2, std::string_view("nu\0l", 4), R"({"a":2})");
  row(3, "fine", R"({"a":"\u0000"})");
  row(4, "escaped backslash", R"({"a":"\\u0000"})");
  auto sink = make_sink(db, "t");
  auto outcome = sink->write(batch, batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 2u);
  EXPECT_EQ(value(db, "SELECT string_agg(id::text, ',' ORDER BY id) FROM landing.t"), "1,4");
  EXPECT_EQ(value(db, "SELECT doc->>'a' FROM landing.t WHERE id = 4"), "\\u0000");
  EXPECT_EQ(value(db, "SELECT string_agg(\"row\"::text, ',' ORDER BY \"row\") FROM landing.t__skippr_rejected"), "1,2");
  EXPECT_NE(value(db, "SELECT reason FROM landing.t__skippr_rejected WHERE \"row\" = 1").find("NUL character"),
            std::string::npos);
  EXPECT_NE(value(db, "SELECT record FROM landing.t__skippr_rejected WHERE \"row\" = 1").find("nu\\u0000l"),
            std::string::npos);
  EXPECT_NE(value(db, "SELECT reason FROM landing.t__skippr_rejected WHERE \"row\" = 2").find("jsonb"),
            std::string::npos);
}

// A number beyond a numeric(p,s) column's range rejects its row (it used to fail the batch on every retry: 22003),
// counting the rounding to s digits; the rest lands.
TEST(PostgresSink, ANumberTooLargeForANumericColumnIsRejectedAndTheRestLands) {
  const auto db = SharedPostgres().create_database("numeric");
  SharedPostgres().execute(db, "CREATE SCHEMA landing; CREATE TABLE landing.t (id bigint, x numeric(5,2), name text)");
  Batch batch;
  batch.add_column({"id", Type::kInt64});
  batch.add_column({"x", Type::kDouble});
  for (auto [id, x] : {std::pair{1, 999.99}, {2, 999.995}, {3, -12345.0}, {4, 0.5}}) {
    batch.columns[0].append_int(id);
    batch.columns[1].append_double(x);
    ++batch.rows;
  }
  auto sink = make_sink(db, "t");
  auto outcome = sink->write(batch, batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 2u);
  EXPECT_EQ(value(db, "SELECT string_agg(id || ':' || x, ',' ORDER BY id) FROM landing.t"), "1:999.99,4:0.50");
  EXPECT_NE(
      value(db, "SELECT min(reason) FROM landing.t__skippr_rejected").find("too large for column \"x\" (numeric(5,2))"),
      std::string::npos);
}

// A table name near PostgreSQL's 63-byte limit still gets its rejects table (a shortened name with a hash), and a
// name beyond the limit is a config error instead of being cut silently.
TEST(PostgresSink, LongTableNamesGetShortenedCompanionTablesAndTooLongOnesAreRefused) {
  const auto db = SharedPostgres().create_database("longname");
  const std::string table(60, 't');
  SharedPostgres().execute(db, fmt::format("CREATE SCHEMA landing; CREATE TABLE landing.{} (id smallint)", table));
  auto sink = make_sink(db, table);
  Batch batch;
  batch.add_column({"id", Type::kInt64});
  batch.columns[0].append_int(1);
  batch.columns[0].append_int(100000);
  batch.rows = 2;
  auto outcome = sink->write(batch, batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(sink->rows_rejected_by_last_write(), 1u);
  const std::string rejects = value(db,
                                    "SELECT table_name FROM information_schema.tables WHERE table_name LIKE "
                                    "'%__skippr_rejected'");
  EXPECT_EQ(rejects.size(), 63u) << rejects;
  EXPECT_EQ(value(db, fmt::format("SELECT count(*) FROM landing.\"{}\"", rejects)), "1");

  ConnectorContext ctx;
  ctx.name = "pg";
  ctx.params = {{"dsn", SharedPostgres().uri(db)}, {"schema", "landing"}, {"table", std::string(64, 'x')}};
  auto refused = postgres_sink_spec().make_sink(ctx);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kConfig);
  EXPECT_NE(refused.error().message.find("the table name is 64 bytes"), std::string::npos) << refused.error().message;
}

TEST(PostgresSink, AUserWithoutCreateOnTheDatabaseLandsIntoAnExistingSchema) {
  const auto db = SharedPostgres().create_database("grants");
  SharedPostgres().execute(db, "CREATE ROLE etl_" + db +
                                   " LOGIN PASSWORD 'etl'; CREATE SCHEMA landing; GRANT USAGE, "
                                   "CREATE ON SCHEMA landing TO etl_" +
                                   db + "; REVOKE CREATE ON DATABASE " + db + " FROM PUBLIC");
  ConnectorContext ctx;
  ctx.name = "pg";
  ctx.params = {{"host", "127.0.0.1"}, {"port", SharedPostgres().port()},
                {"user", "etl_" + db}, {"password", "etl"},
                {"database", db},      {"schema", "landing"},
                {"table", "t"}};
  auto sink = std::move(*postgres_sink_spec().make_sink(ctx));
  auto opened = sink->open();
  ASSERT_TRUE(opened) << opened.error().message;
  auto outcome = sink->write(testing::simple_batch(4, 1), batch_id(1));
  ASSERT_TRUE(outcome) << outcome.error().message;
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t"), "4");
}

// One change for key `id`: op, order token, and a payload.
Batch change(int64_t id, std::string_view op, int64_t order, std::string_view payload) {
  Batch b;
  b.add_column({"id", Type::kInt64});
  b.add_column({"payload", Type::kString});
  b.add_column({std::string(kOpField), Type::kString});
  b.add_column({std::string(kOrderField), Type::kInt64});
  b.columns[0].append_int(id);
  b.columns[1].append_string(payload);
  b.columns[2].append_string(op);
  b.columns[3].append_int(order);
  b.rows = 1;
  return b;
}

TEST(PostgresSink, MergeByKeyNeverLetsAnOlderChangeOverwriteANewerOneAndDeletesLeaveTombstones) {
  const auto db = SharedPostgres().create_database("merge");
  auto sink = make_sink(db, "t", Landing::kMergeByKey, {"id"});
  uint64_t seq = 0;
  auto apply = [&](const Batch& b) {
    auto outcome = sink->write(b, batch_id(++seq));
    ASSERT_TRUE(outcome) << outcome.error().message;
  };
  auto payload_of = [&](int id) {
    return value(db,
                 "SELECT coalesce((SELECT payload FROM landing.t WHERE id = " + std::to_string(id) + "), 'absent')");
  };
  apply(change(1, "insert", 10, "v10"));
  EXPECT_EQ(payload_of(1), "v10");
  apply(change(1, "update", 5, "v5-late"));
  EXPECT_EQ(payload_of(1), "v10") << "an older update overwrote a newer row";
  apply(change(1, "update", 12, "v12"));
  EXPECT_EQ(payload_of(1), "v12");
  apply(change(1, "delete", 20, ""));
  EXPECT_EQ(payload_of(1), "absent");
  apply(change(1, "insert", 15, "v15-late"));
  EXPECT_EQ(payload_of(1), "absent") << "a late, older insert brought a deleted row back";
  apply(change(1, "insert", 30, "v30"));
  EXPECT_EQ(payload_of(1), "v30");
  // A delete older than the row leaves the row alone.
  apply(change(1, "delete", 25, ""));
  EXPECT_EQ(payload_of(1), "v30");

  // Several changes to one key in one batch: the newest wins, whatever their order in the batch.
  Batch mixed = change(2, "insert", 100, "a");
  ASSERT_TRUE(mixed.append(change(2, "update", 300, "c")));
  ASSERT_TRUE(mixed.append(change(2, "update", 200, "b")));
  ASSERT_TRUE(mixed.append(change(3, "insert", 100, "x")));
  ASSERT_TRUE(mixed.append(change(3, "delete", 150, "")));
  apply(mixed);
  EXPECT_EQ(payload_of(2), "c");
  EXPECT_EQ(payload_of(3), "absent");
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing.t"), "2");
}

// The same rules as the DuckDB sink (core/change_fields.h): an unknown change kind or a null key is bad input, named
// by field and row, and nothing of the batch lands.
TEST(PostgresSink, MergeByKeyRefusesAnUnknownChangeKindAndANullKey) {
  const auto db = SharedPostgres().create_database("mergebad");
  auto sink = make_sink(db, "t", Landing::kMergeByKey, {"id"});
  Batch unknown_op = change(1, "insert", 10, "a");
  ASSERT_TRUE(unknown_op.append(change(2, "remove", 11, "")));
  Batch null_key = change(1, "insert", 10, "a");
  null_key.columns[0] = Column(Type::kInt64);
  null_key.columns[0].append_null();
  const std::pair<const Batch*, std::string> cases[] = {
      {&unknown_op, "field \"_skippr_op\" in row 1 is 'remove'; it must be insert, update, delete, truncate or null"},
      {&null_key, "field \"id\" in row 0 is null, but it is part of the primary_key"}};
  for (const auto& [batch, message] : cases) {
    auto outcome = sink->write(*batch, batch_id(1));
    ASSERT_FALSE(outcome) << message;
    EXPECT_EQ(outcome.error().kind, ErrorKind::kBadInput) << message;
    EXPECT_NE(outcome.error().message.find(message), std::string::npos) << outcome.error().message;
  }
  EXPECT_EQ(value(db, "SELECT count(*) FROM landing._skippr_batches"), "0");
}

TEST(PostgresSink, MergeByKeyWithoutTokensLetsTheLaterBatchAndRowWin) {
  const auto db = SharedPostgres().create_database("mergeseq");
  auto sink = make_sink(db, "t", Landing::kMergeByKey, {"id"});
  ASSERT_TRUE(sink->write(testing::simple_batch(3, 1), batch_id(1)));
  Batch later = testing::simple_batch(2, 2);
  later.columns[2] = Column(Type::kString);
  later.columns[2].append_string("new-2");
  later.columns[2].append_string("new-3");
  ASSERT_TRUE(sink->write(later, batch_id(2)));
  // Replaying batch 1 under a later epoch's sequence would win; replaying the same BatchId does nothing.
  auto replay = sink->write(testing::simple_batch(3, 1), batch_id(1));
  ASSERT_TRUE(replay);
  EXPECT_EQ(*replay, WriteOutcome::kAlreadyApplied);
  EXPECT_EQ(value(db, "SELECT string_agg(id || '=' || name, ' ' ORDER BY id) FROM landing.t"),
            "1=name-1 2=new-2 3=new-3");
}

TEST(PostgresSink, MergeByKeyIntoATableWithoutAUniqueKeyIsAConfigErrorAtOpen) {
  const auto db = SharedPostgres().create_database("nokey");
  SharedPostgres().execute(db, "CREATE SCHEMA landing; CREATE TABLE landing.t (id bigint, x float8, name text)");
  ConnectorContext ctx;
  ctx.name = "pg";
  ctx.params = {{"dsn", SharedPostgres().uri(db)}, {"schema", "landing"}, {"table", "t"}};
  ctx.landing = Landing::kMergeByKey;
  ctx.primary_key = {"id"};
  auto opened = (*postgres_sink_spec().make_sink(ctx))->open();
  ASSERT_FALSE(opened);
  EXPECT_EQ(opened.error().kind, ErrorKind::kConfig);
  EXPECT_NE(opened.error().message.find("no unique index on (id)"), std::string::npos) << opened.error().message;
}

}  // namespace
}  // namespace skippr
