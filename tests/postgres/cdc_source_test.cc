// The CDC source against a real PostgreSQL 15 (wal_level = logical), driven directly through the Source interface
// (as the engine drives it) and through skipprd: snapshot then stream with ops and order tokens, a primary-key update
// as delete + upsert, events of one transaction with distinct tokens, restarts between polls and inside a
// transaction, the slot's confirmed flush moving only on acknowledge, and the checks that exit 2.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <set>
#include <thread>

#include "core/connector.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/replication_stream.h"
#include "support/pipeline_fixture.h"
#include "support/postgres_server.h"

namespace skippr::test {
namespace {

using Row = std::map<std::string, std::optional<std::string>>;

std::optional<std::string> cell(const Column& c, size_t row) {
  if (!c.is_valid(row)) return std::nullopt;
  switch (c.type) {
    case Type::kString:
    case Type::kJson:
    case Type::kBinary:
      return std::string(c.string_at(row));
    case Type::kDouble:
      return fmt::format("{}", c.double_at(row));
    default:
      return std::to_string(c.int_at(row));
  }
}

unsigned __int128 token_value(const std::string& token) {
  unsigned __int128 v = 0;
  for (char ch : token) v = v * 10 + static_cast<unsigned>(ch - '0');
  return v;
}

struct Reader {
  std::unique_ptr<Source> source;
  Position position;
  std::vector<Row> rows;

  // Polls until the source reports drained (or `max_polls`), keeping every row and the last position.
  void until_drained(Budget budget = {}, int max_polls = 400) {
    for (int i = 0; i < max_polls; ++i) {
      auto poll = source->poll(budget);
      ASSERT_TRUE(poll) << poll.error().message;
      take(*poll);
      if (poll->drained) return;
    }
    FAIL() << "never drained";
  }
  void take(const Poll& poll) {
    for (size_t r = 0; r < poll.records.rows; ++r) {
      Row row;
      for (size_t f = 0; f < poll.records.schema.fields.size(); ++f) {
        row[poll.records.schema.fields[f].name] = cell(poll.records.columns[f], r);
      }
      rows.push_back(std::move(row));
    }
    position = poll.position_after;
  }
};

Reader open_reader(const std::string& uri, const std::string& mode, const std::string& slot,
                   const Position& from = {}) {
  ConnectorContext ctx;
  ctx.name = "app";
  ctx.pipeline = "cdc_test";
  ctx.params = {{"dsn", uri},   {"schema", "shop"}, {"tables", {"items"}},
                {"mode", mode}, {"slot", slot},     {"publication", "pub_items"}};
  ctx.landing = Landing::kMergeByKey;
  auto source = find_connector("Postgres", true)->make_source(ctx);
  EXPECT_TRUE(source) << source.error().message;
  Reader reader{std::move(*source), from, {}};
  auto st = reader.source->open();
  EXPECT_TRUE(st) << st.error().message;
  st = reader.source->seek(from);
  EXPECT_TRUE(st) << st.error().message;
  return reader;
}

constexpr const char* kCreateItems =
    "CREATE SCHEMA shop; CREATE TABLE shop.items (id int PRIMARY KEY, name text, amount numeric(12,3), at "
    "timestamptz, flag boolean, doc jsonb, ratio real, wide double precision, day date, blob bytea)";

std::string insert_items(int first, int last) {
  return fmt::format(
      "INSERT INTO shop.items SELECT i, 'item ' || i || ' é', (i * -1.125)::numeric(12,3), timestamptz "
      "'2024-03-01 00:00:00.123456+00' + i * interval '1 day 1.5 s', i % 2 = 0, jsonb_build_object('i', i, 'l', "
      "jsonb_build_array(1, 'x')), i / 10.0, i / 3.0, date '2024-02-29' + i, decode(lpad(to_hex(i), 4, '0'), 'hex') "
      "FROM generate_series({}, {}) i",
      first, last);
}

TEST(PostgresCdc, SnapshotThenStreamDeliversRowsThenChangesWithOpsAndIncreasingTokens) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  pg.execute(db, kCreateItems);
  pg.execute(db, insert_items(1, 40));
  pg.execute(db, "UPDATE shop.items SET name = NULL, at = NULL, doc = NULL WHERE id = 7");

  Reader r = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_a");
  r.until_drained({.max_rows = 15, .max_bytes = 10 << 20});
  ASSERT_EQ(r.rows.size(), 40u);
  const std::string snapshot_token = *r.rows[0].at("_skippr_order");
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(r.rows[i].at("id"), std::to_string(i + 1));  // in key order
    EXPECT_EQ(r.rows[i].at("_skippr_op"), "insert");
    EXPECT_EQ(r.rows[i].at("_skippr_order"), snapshot_token);
  }
  EXPECT_EQ(token_value(snapshot_token) & 0xffffffffu, 0u);
  EXPECT_EQ(r.rows[6].at("name"), std::nullopt);

  pg.execute(db, insert_items(41, 41));
  pg.execute(db, "UPDATE shop.items SET name = 'renamed' WHERE id = 1");
  pg.execute(db, "DELETE FROM shop.items WHERE id = 2");
  pg.execute(db,
             "BEGIN; UPDATE shop.items SET flag = NOT flag WHERE id = 3; UPDATE shop.items SET ratio = 0.1 WHERE id = "
             "4; INSERT INTO shop.items (id, name) VALUES (42, 'x'); COMMIT");
  pg.execute(db, "UPDATE shop.items SET id = 105, name = 'moved' WHERE id = 5");
  r.rows.clear();
  for (int i = 0; i < 50 && r.rows.size() < 8; ++i) r.until_drained();
  ASSERT_EQ(r.rows.size(), 8u);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"insert", "41"}, {"update", "1"},  {"delete", "2"}, {"update", "3"},
      {"update", "4"},  {"insert", "42"}, {"delete", "5"}, {"update", "105"}};
  unsigned __int128 previous = token_value(snapshot_token);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.rows[i].at("_skippr_op"), expected[i].first) << i;
    EXPECT_EQ(r.rows[i].at("id"), expected[i].second) << i;
    const auto token = token_value(*r.rows[i].at("_skippr_order"));
    EXPECT_GT(token, previous) << "event " << i << " does not outrank the one before";
    previous = token;
  }
  EXPECT_EQ(r.rows[1].at("name"), "renamed");
  // A delete carries the key only.
  EXPECT_EQ(r.rows[2].at("name"), std::nullopt);
  EXPECT_EQ(r.rows[6].at("name"), std::nullopt);
  EXPECT_EQ(r.rows[7].at("name"), "moved");
  // One transaction: one commit LSN, events 1, 2, 3.
  auto high = [&](size_t i) { return token_value(*r.rows[i].at("_skippr_order")) >> 32; };
  auto low = [&](size_t i) { return static_cast<unsigned>(token_value(*r.rows[i].at("_skippr_order")) & 0xffffffff); };
  EXPECT_EQ(high(3), high(4));
  EXPECT_EQ(high(4), high(5));
  EXPECT_EQ(low(3), 1u);
  EXPECT_EQ(low(4), 2u);
  EXPECT_EQ(low(5), 3u);
  // The primary-key update: delete of the old key then the new key, one transaction.
  EXPECT_EQ(high(6), high(7));
  EXPECT_EQ(low(6) + 1, low(7));

  // The stream's values convert exactly like the snapshot's: a second slot's snapshot reads the same rows.
  Reader fresh = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_b");
  fresh.until_drained();
  auto snapshot_of = [&](const std::string& id) {
    for (const auto& row : fresh.rows)
      if (row.at("id") == id) return row;
    return Row{};
  };
  for (size_t i : {0, 1, 4, 7}) {
    Row streamed = r.rows[i], read = snapshot_of(*streamed.at("id"));
    ASSERT_FALSE(read.empty()) << *streamed.at("id");
    for (auto* convention : {"_skippr_op", "_skippr_order"}) {
      streamed.erase(convention);
      read.erase(convention);
    }
    EXPECT_EQ(streamed, read) << "row " << *r.rows[i].at("id");
  }
}

TEST(PostgresCdc, RestartsBetweenPollsAndInsideATransactionNeitherLoseNorDoubleEvents) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  pg.execute(db, kCreateItems);
  Reader first = open_reader(pg.uri(db), "cdc_only", "slot_r");
  first.until_drained();
  EXPECT_TRUE(first.rows.empty());
  const Position start = first.position;
  first.source.reset();                 // lets go of the slot
  pg.execute(db, insert_items(1, 10));  // one transaction, 10 events
  pg.execute(db,
             "BEGIN; UPDATE shop.items SET name = 'u' WHERE id <= 5; DELETE FROM shop.items WHERE id > 8; "
             "COMMIT");                  // 7 events
  pg.execute(db, insert_items(11, 13));  // 3 events

  // Each "run" reads 4 rows at most, then the process "dies" (nothing acknowledged): the next resumes from the
  // position of the last poll, which sometimes falls inside a transaction.
  std::vector<Row> all;
  Position position = start;
  for (int run = 0; run < 20 && all.size() < 20; ++run) {
    Reader r = open_reader(pg.uri(db), "cdc_only", "slot_r", position);
    for (int p = 0; p < 30 && r.rows.empty(); ++p) {
      auto poll = r.source->poll({.max_rows = 4, .max_bytes = 10 << 20});
      ASSERT_TRUE(poll) << poll.error().message;
      r.take(*poll);
    }
    ASSERT_LE(r.rows.size(), 4u);
    all.insert(all.end(), r.rows.begin(), r.rows.end());
    position = r.position;
  }
  ASSERT_EQ(all.size(), 20u);
  std::set<std::string> tokens;
  for (const auto& row : all) tokens.insert(*row.at("_skippr_order"));
  EXPECT_EQ(tokens.size(), 20u) << "an event was delivered twice";
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_GT(token_value(*all[i].at("_skippr_order")), token_value(*all[i - 1].at("_skippr_order")));
  }
  EXPECT_EQ(all[9].at("id"), "10");
  EXPECT_EQ(all[10].at("_skippr_op"), "update");
  EXPECT_EQ(all[15].at("_skippr_op"), "delete");
  EXPECT_EQ(all[19].at("id"), "13");
  // And nothing more after the last position.
  Reader last = open_reader(pg.uri(db), "cdc_only", "slot_r", position);
  last.until_drained();
  EXPECT_TRUE(last.rows.empty());
}

TEST(PostgresCdc, ABrokenStreamReconnectsInsideATransactionAndNeitherLosesNorDoublesEvents) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  pg.execute(db, kCreateItems);
  Reader r = open_reader(pg.uri(db), "cdc_only", "slot_t");
  r.until_drained();
  pg.execute(db, insert_items(1, 10));
  for (int i = 0; i < 30 && r.rows.empty(); ++i) {
    auto poll = r.source->poll({.max_rows = 4, .max_bytes = 10 << 20});
    ASSERT_TRUE(poll) << poll.error().message;
    r.take(*poll);
  }
  ASSERT_EQ(r.rows.size(), 4u);  // inside the transaction of 10
  pg.execute(db, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'slot_t'");
  pg.execute(db, insert_items(11, 15));
  for (int i = 0; i < 50 && r.rows.size() < 15; ++i) r.until_drained();
  ASSERT_EQ(r.rows.size(), 15u);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(r.rows[i].at("id"), std::to_string(i + 1));
    if (i > 0) {
      EXPECT_GT(token_value(*r.rows[i].at("_skippr_order")), token_value(*r.rows[i - 1].at("_skippr_order")));
    }
  }
}

TEST(PostgresCdc, TheSlotsConfirmedFlushMovesOnlyOnAcknowledge) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  pg.execute(db, kCreateItems);
  Reader r = open_reader(pg.uri(db), "cdc_only", "slot_ack");
  auto confirmed = [&] {
    return pg.value(db, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'slot_ack'");
  };
  r.until_drained();
  const std::string before = confirmed();
  pg.execute(db, insert_items(1, 5));
  for (int i = 0; i < 50 && r.rows.size() < 5; ++i) r.until_drained();
  ASSERT_EQ(r.rows.size(), 5u);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  r.until_drained();
  EXPECT_EQ(confirmed(), before) << "the slot moved before acknowledge";

  ASSERT_TRUE(r.source->acknowledge(r.position));
  auto position = CdcPosition::parse(r.position);
  ASSERT_TRUE(position);
  ASSERT_TRUE(position->tx_done);
  std::string after;
  for (int i = 0; i < 50 && (after = confirmed()) == before; ++i) r.until_drained();  // the reader sends the update
  EXPECT_NE(after, before);
  EXPECT_EQ(after, format_lsn(position->end_lsn));
}

// What a merge_by_key sink does with the rows: per key, the highest token wins; a delete leaves a tombstone.
struct MergedTable {
  struct Entry {
    unsigned __int128 token = 0;
    std::optional<Row> row;  // nullopt: deleted
  };
  std::map<std::string, Entry> by_key;
  void apply(const std::vector<Row>& rows) {
    for (Row row : rows) {
      const auto token = token_value(*row.at("_skippr_order"));
      const bool is_delete = row.at("_skippr_op") == "delete";
      auto& entry = by_key[*row.at("id")];
      if (entry.token > token || (entry.token == token && (entry.row || is_delete))) continue;
      row.erase("_skippr_op");
      row.erase("_skippr_order");
      entry = {token, is_delete ? std::nullopt : std::optional<Row>(row)};
    }
  }
  std::map<std::string, Row> live() const {
    std::map<std::string, Row> out;
    for (const auto& [key, entry] : by_key)
      if (entry.row) out[key] = *entry.row;
    return out;
  }
};

TEST(PostgresCdc, AKillMidSnapshotResumesFromAFreshSnapshotAndStillConverges) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  pg.execute(db, kCreateItems);
  pg.execute(db, insert_items(1, 40));
  MergedTable mirror;
  Position killed_at;
  {
    Reader a = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_k");
    auto poll = a.source->poll({.max_rows = 10, .max_bytes = 10 << 20});
    ASSERT_TRUE(poll) << poll.error().message;
    a.take(*poll);
    ASSERT_EQ(a.rows.size(), 10u);
    mirror.apply(a.rows);
    killed_at = a.position;  // the exported snapshot dies with this run
  }
  ASSERT_TRUE(CdcPosition::parse(killed_at)->snapshot);
  // Changes after the consistent point, both in the part already read and in the rest.
  pg.execute(db, "UPDATE shop.items SET name = 'early' WHERE id = 5");
  pg.execute(db,
             "BEGIN; UPDATE shop.items SET name = 'late' WHERE id = 20; DELETE FROM shop.items WHERE id = 30; "
             "COMMIT");
  pg.execute(db, "UPDATE shop.items SET id = 3500 WHERE id = 35");
  pg.execute(db, "UPDATE shop.items SET id = 7000 WHERE id = 7");
  pg.execute(db, insert_items(41, 41));

  Reader b = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_k", killed_at);
  for (int i = 0; i < 50 && b.rows.size() < 31 + 8; ++i) b.until_drained();
  // 30 rows of the fresh snapshot after key 10 (35 moved to 3500, 30 deleted, 7000 and 41 added), 8 changes.
  EXPECT_EQ(b.rows.size(), 31u + 8u);
  mirror.apply(b.rows);

  Reader truth = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_k_truth");
  truth.until_drained();
  MergedTable expected;
  expected.apply(truth.rows);
  EXPECT_EQ(mirror.live(), expected.live());
  EXPECT_EQ(mirror.live().size(), 40u);
}

std::string cdc_config(const std::string& source_uri, const std::string& sink_uri,
                       const std::string& mode = "snapshot_then_cdc") {
  return fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [items], mode: {} }}
data_sinks:
  copy_db:
    Postgres: {{ dsn: "{}", schema: mirror, table: items }}
pipelines:
  copy:
    data_source: data_sources.app
    data_sink: data_sinks.copy_db
    landing: merge_by_key
    primary_key: id
)",
                     source_uri, mode, sink_uri);
}

const std::vector<std::string> kSync = {"sync", "--pipeline", "copy", "--once"};

TEST(PostgresCdc, SkipprdMirrorsTheTableThroughSnapshotAndChanges) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  const auto dst = pg.create_database("dst");
  pg.execute(src, kCreateItems);
  pg.execute(src, insert_items(1, 300));
  PipelineFixture fx(cdc_config(pg.uri(src), pg.uri(dst)));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "5000"}};
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pg.execute(src,
             "UPDATE shop.items SET name = 'again', amount = amount + 1 WHERE id % 7 = 0; DELETE FROM "
             "shop.items WHERE id % 11 = 0; UPDATE shop.items SET id = id + 1000 WHERE id % 13 = 0");
  pg.execute(src, insert_items(301, 320));
  r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string digest =
      "SET TIME ZONE 'UTC'; SELECT count(*), md5(string_agg(concat_ws('|', id, name, amount::text, "
      "(extract(epoch FROM at) * 1000000)::bigint, flag, doc::jsonb::text, ratio::real, wide, day, "
      "encode(blob, 'hex')), ',' ORDER BY id)) FROM {}";
  EXPECT_EQ(pg.query(dst, fmt::format(fmt::runtime(digest), "mirror.items")),
            pg.query(src, fmt::format(fmt::runtime(digest), "shop.items")));
}

TEST(PostgresCdc, AServerWithoutLogicalWalLevelExitsTwoWithTheFix) {
  PostgresServer replica_only(std::map<std::string, std::string>{{"wal_level", "replica"}});
  const auto db = replica_only.create_database("cdc");
  replica_only.execute(db, kCreateItems);
  PipelineFixture fx(cdc_config(replica_only.uri(db), replica_only.uri(db)));
  auto r = fx.skipprd(kSync);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("set wal_level = logical in postgresql.conf and restart the server"), std::string::npos)
      << r.err;
  EXPECT_EQ(replica_only.value(db, "SELECT count(*) FROM pg_replication_slots"), "0");
}

TEST(PostgresCdc, AMissingTableOrKeyExitsTwoBeforeAnythingIsCommitted) {
  auto& pg = SharedPostgres();
  const auto db = pg.create_database("cdc");
  PipelineFixture missing(cdc_config(pg.uri(db), pg.uri(db)));
  auto r = missing.skipprd(kSync);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("table \"shop\".\"items\" does not exist"), std::string::npos) << r.err;

  pg.execute(db, "CREATE SCHEMA shop; CREATE TABLE shop.items (id int NOT NULL, name text)");
  PipelineFixture no_identity(cdc_config(pg.uri(db), pg.uri(db)));
  r = no_identity.skipprd(kSync);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("REPLICA IDENTITY FULL"), std::string::npos) << r.err;
  EXPECT_EQ(pg.value(db, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"), "0");
}

}  // namespace
}  // namespace skippr::test
