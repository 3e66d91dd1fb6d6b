// The CDC source against a real PostgreSQL 15 (wal_level = logical), driven directly through the Source interface
// (as the engine drives it) and through skipprd: snapshot then stream with ops and order tokens, a primary-key update
// as delete + upsert, events of one transaction with distinct tokens, restarts between polls and inside a
// transaction, the slot's confirmed flush moving only on acknowledge, and the checks that exit 2. Issue 23: default
// slots per pipeline and a slot another pipeline reads, a primary_key no unique index backs, unchanged TOASTed values
// fetched by key, no free slot, infinite timestamps as NULL with a dead letter, and on_truncate.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "core/connector.h"
#include "core/time_util.h"
#include "sources/postgres/cdc_position.h"
#include "sources/postgres/cdc_source.h"
#include "sources/postgres/replication_stream.h"
#include "support/duckdb_probe.h"
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
  std::vector<Row> truncates;  // _skippr_op = truncate rows (the end of a snapshot, a TRUNCATE), kept apart
  void take(const Poll& poll) {
    for (size_t r = 0; r < poll.records.rows; ++r) {
      Row row;
      for (size_t f = 0; f < poll.records.schema.fields.size(); ++f) {
        row[poll.records.schema.fields[f].name] = cell(poll.records.columns[f], r);
      }
      (row.at("_skippr_op") == "truncate" ? truncates : rows).push_back(std::move(row));
    }
    position = poll.position_after;
  }
};

// The shared server has max_replication_slots = 10: every test drops the slots it made in its database, once their
// readers are gone (declared right after the database, so it runs last).
struct DropSlotsAtEnd {
  const PostgresServer& pg;
  std::string db;
  ~DropSlotsAtEnd() {
    try {
      for (int i = 0; i < 50; ++i) {
        pg.execute(db,
                   "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = "
                   "current_database() AND active_pid IS NOT NULL");
        pg.execute(db,
                   "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = "
                   "current_database() AND NOT active");
        if (pg.value(db, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()") == "0") {
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "dropping the test's replication slots: " << e.what();
    }
  }
};

// The source and destination databases of a test that runs skipprd from one to the other, on the shared server;
// the source's replication slots are dropped when it goes (declare it first, so that runs last).
struct CdcDatabases {
  PostgresServer& pg = SharedPostgres();
  const std::string src = pg.create_database("src");
  DropSlotsAtEnd drop_src_slots{pg, src};
  const std::string dst = pg.create_database("dst");
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
  Reader reader{std::move(*source), from, {}, {}};
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

// A database of the test's own holding shop.items; its replication slots are dropped when the test ends (declare it
// first, so that runs after the readers are gone).
struct ItemsDatabase {
  PostgresServer& pg = SharedPostgres();
  const std::string db;
  DropSlotsAtEnd drop_slots;
  explicit ItemsDatabase(const std::string& name) : db(pg.create_database(name)), drop_slots{pg, db} {
    pg.execute(db, kCreateItems);
  }
};

TEST(PostgresCdc, SnapshotThenStreamDeliversRowsThenChangesWithOpsAndIncreasingTokens) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
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

// Each streamed poll tells the commit time of its oldest change (the engine reports a landed batch's source lag from
// it); a snapshot has no commit of its own and tells none.
TEST(PostgresCdc, StreamedPollsCarryTheCommitTimeOfTheirOldestChangeAndSnapshotsNone) {
  const ItemsDatabase items("cdc_time");
  auto& pg = items.pg;
  const std::string& db = items.db;
  pg.execute(db, insert_items(1, 10));
  Reader r = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_time");
  for (int i = 0; i < 50; ++i) {
    auto poll = r.source->poll({});
    ASSERT_TRUE(poll) << poll.error().message;
    EXPECT_FALSE(poll->oldest_record_time_micros) << "a snapshot poll";
    r.take(*poll);
    if (poll->drained) break;
  }
  ASSERT_EQ(r.rows.size(), 10u);

  const int64_t before = now_micros();
  pg.execute(db, insert_items(11, 11));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t between = now_micros();
  pg.execute(db, insert_items(12, 12));
  const int64_t after = now_micros();
  std::vector<Poll> polls;
  size_t rows = 0;
  for (int i = 0; i < 100 && rows < 2; ++i) {
    auto poll = r.source->poll({});
    ASSERT_TRUE(poll) << poll.error().message;
    if (poll->records.rows == 0) {
      EXPECT_FALSE(poll->oldest_record_time_micros) << "a poll without changes";
      continue;
    }
    ASSERT_TRUE(poll->oldest_record_time_micros) << "a poll with changes";
    rows += poll->records.rows;
    polls.push_back(std::move(*poll));
  }
  ASSERT_EQ(rows, 2u);
  // The server's clock is this machine's: the first change committed between `before` and `between` (a
  // millisecond of slack for the two clocks' rounding), whether both changes came in one poll or two.
  const int64_t first = *polls.front().oldest_record_time_micros;
  EXPECT_GE(first, before - 1000);
  EXPECT_LT(first, between);
  if (polls.size() == 2) {
    EXPECT_GE(*polls.back().oldest_record_time_micros, between - 1000);
    EXPECT_LE(*polls.back().oldest_record_time_micros, after + 1000);
  }
}

// Issue 21: a streamed poll tells how much of the server's WAL lies past its position (the metric
// skippr_source_wal_bytes_waiting). Writes to a table outside the publication send nothing, yet the slot holds their
// WAL: the backlog grows by at least what they wrote. A change of ours moves the position past them: it falls again.
TEST(PostgresCdc, StreamedPollsTellTheWalBytesWaitingPastTheirPosition) {
  const ItemsDatabase items("cdc_backlog");
  auto& pg = items.pg;
  const std::string& db = items.db;
  pg.execute(db, "CREATE TABLE shop.elsewhere (x text)");
  Reader r = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_backlog");
  r.until_drained();
  auto wal_now = [&] { return *pg.query(db, "SELECT pg_current_wal_lsn()::text")[0][0]; };
  auto bytes_between = [&](const std::string& a, const std::string& b) {
    return std::stoull(*pg.query(db, fmt::format("SELECT pg_wal_lsn_diff('{}', '{}')::bigint", b, a))[0][0]);
  };
  const std::string before = wal_now();
  pg.execute(db, "INSERT INTO shop.elsewhere SELECT repeat('x', 1000) FROM generate_series(1, 3000)");
  const uint64_t written = bytes_between(before, wal_now());
  ASSERT_GT(written, 2u << 20);
  std::optional<uint64_t> seen;
  ASSERT_TRUE(find_connector("Postgres", true)->backlog);
  EXPECT_EQ(find_connector("Postgres", true)->backlog->name, "wal_bytes") << "the unit its spec declares";
  for (int i = 0; i < 40 && !(seen && *seen >= written); ++i) {  // a reply is asked for every second
    auto poll = r.source->poll({});
    ASSERT_TRUE(poll) << poll.error().message;
    EXPECT_EQ(poll->records.rows, 0u) << "a table outside the publication";
    ASSERT_TRUE(poll->backlog) << "a streamed poll tells its backlog";
    seen = poll->backlog;
  }
  ASSERT_TRUE(seen);
  EXPECT_GE(*seen, written) << "the other table's WAL is held by the slot and counted";

  pg.execute(db, insert_items(1, 1));
  size_t rows = 0;
  for (int i = 0; i < 40 && rows == 0; ++i) {
    auto poll = r.source->poll({});
    ASSERT_TRUE(poll) << poll.error().message;
    rows += poll->records.rows;
    seen = poll->backlog;
  }
  ASSERT_EQ(rows, 1u);
  ASSERT_TRUE(seen);
  EXPECT_LT(*seen, 256u << 10) << "the position moved past the other table's WAL with our change";
}

// Under a write load without pauses, a poll still ends drained once its time window is used up on a transaction
// boundary, so the engine cuts a batch about every half second instead of waiting BUFFER_THRESHOLD_SECONDS.
TEST(PostgresCdc, AStreamUnderASteadyWriteLoadStillEndsPollsDrained) {
  const ItemsDatabase items("cdc_load");
  auto& pg = items.pg;
  const std::string& db = items.db;
  Reader r = open_reader(pg.uri(db), "snapshot_then_cdc", "slot_load");
  r.until_drained();
  // One statement committing row after row for 5 s, as fast as the server goes: changes never pause for as long as
  // the poll's 100 ms idle wait (at a few hundred commits a second they did: the walsender sends in bursts).
  std::jthread writer([&] {
    try {
      pg.execute(db,
                 "DO $$ DECLARE i int := 0; stop timestamptz := clock_timestamp() + interval '5 s'; BEGIN WHILE "
                 "clock_timestamp() < stop LOOP i := i + 1; INSERT INTO shop.items (id, name) VALUES (i, 'x'); "
                 "COMMIT; END LOOP; END $$");
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the write load: " << e.what();
    }
  });
  // Only polls that used their whole window count: a poll that met a pause (a loaded machine) ends drained anyway.
  const auto start = std::chrono::steady_clock::now();
  int full_windows = 0, full_windows_drained = 0;
  size_t rows = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(4)) {
    const auto polled_at = std::chrono::steady_clock::now();
    // A budget no window fills (a fast machine reads more than 65,536 changes in half a second): the window ends it.
    auto poll = r.source->poll({.max_rows = 1u << 24, .max_bytes = size_t{1} << 32});
    ASSERT_TRUE(poll) << poll.error().message;
    rows += poll->records.rows;
    if (std::chrono::steady_clock::now() - polled_at >= std::chrono::milliseconds(490)) {
      ++full_windows;
      if (poll->drained) ++full_windows_drained;
    }
  }
  EXPECT_GT(rows, 50u);
  EXPECT_GE(full_windows, 3) << "the load should keep polls busy for their whole window";
  EXPECT_EQ(full_windows_drained, full_windows) << "a poll that used its window should end drained";
}

TEST(PostgresCdc, RestartsBetweenPollsAndInsideATransactionNeitherLoseNorDoubleEvents) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
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

  // Each "run" reads 8 rows at most (a poll reads on to a transaction's commit for four budgets of 2, then splits it),
  // then the process "dies" (nothing acknowledged): the next resumes from the position of the last poll, which
  // sometimes falls inside a transaction.
  std::vector<Row> all;
  Position position = start;
  for (int run = 0; run < 20 && all.size() < 20; ++run) {
    Reader r = open_reader(pg.uri(db), "cdc_only", "slot_r", position);
    for (int p = 0; p < 30 && r.rows.empty(); ++p) {
      auto poll = r.source->poll({.max_rows = 2, .max_bytes = 10 << 20});
      ASSERT_TRUE(poll) << poll.error().message;
      r.take(*poll);
    }
    ASSERT_LE(r.rows.size(), 8u);
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

// A column added to the table while changes stream arrives as a new column of the same poll's batch: NULL for the
// changes before it, the value after.
TEST(PostgresCdc, AColumnAddedMidStreamJoinsThePollsBatch) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
  Reader r = open_reader(pg.uri(db), "cdc_only", "slot_col");
  r.until_drained();
  pg.execute(db,
             "BEGIN; INSERT INTO shop.items (id, name) VALUES (1, 'before'); ALTER TABLE shop.items ADD COLUMN extra "
             "text; INSERT INTO shop.items (id, name, extra) VALUES (2, 'after', 'x'); COMMIT");
  for (int i = 0; i < 50 && r.rows.size() < 2; ++i) r.until_drained();
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].at("name"), "before");
  EXPECT_EQ(r.rows[0].at("extra"), std::nullopt);
  EXPECT_EQ(r.rows[1].at("extra"), "x");
}

// A transaction is never split over two polls (so over two WAL batches) while it fits four budgets: a destination
// shows all of it or none.
TEST(PostgresCdc, APollReadsOnToTheCommitOfATransactionLargerThanItsBudget) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
  Reader r = open_reader(pg.uri(db), "cdc_only", "slot_w");
  r.until_drained();
  pg.execute(db, insert_items(1, 10));
  pg.execute(db, insert_items(11, 13));
  std::vector<size_t> poll_sizes;
  for (int i = 0; i < 50 && r.rows.size() < 13; ++i) {
    auto poll = r.source->poll({.max_rows = 4, .max_bytes = 10 << 20});
    ASSERT_TRUE(poll) << poll.error().message;
    if (poll->records.rows > 0) poll_sizes.push_back(poll->records.rows);
    r.take(*poll);
  }
  EXPECT_EQ(poll_sizes, (std::vector<size_t>{10, 3}));
}

TEST(PostgresCdc, ABrokenStreamReconnectsInsideATransactionAndNeitherLosesNorDoublesEvents) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
  Reader r = open_reader(pg.uri(db), "cdc_only", "slot_t");
  r.until_drained();
  pg.execute(db, insert_items(1, 10));
  for (int i = 0; i < 30 && r.rows.empty(); ++i) {
    auto poll = r.source->poll({.max_rows = 2, .max_bytes = 10 << 20});
    ASSERT_TRUE(poll) << poll.error().message;
    r.take(*poll);
  }
  ASSERT_EQ(r.rows.size(), 8u);  // inside the transaction of 10: split after four budgets of 2
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
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
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
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
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
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 300));
  PipelineFixture fx(cdc_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst)));
  const std::map<std::string, std::string> env = {{"BUFFER_THRESHOLD_BYTES", "5000"}};
  auto r = fx.skipprd(kSync, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dbs.pg.execute(dbs.src,
                 "UPDATE shop.items SET name = 'again', amount = amount + 1 WHERE id % 7 = 0; DELETE FROM "
                 "shop.items WHERE id % 11 = 0; UPDATE shop.items SET id = id + 1000 WHERE id % 13 = 0");
  dbs.pg.execute(dbs.src, insert_items(301, 320));
  std::vector<std::string> sync_json = kSync;
  sync_json.insert(sync_json.end(), {"--output", "json"});
  const int64_t changed_by = now_micros();
  r = fx.skipprd(sync_json, env);
  const double run_seconds = static_cast<double>(now_micros() - changed_by) / 1e6;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Every streamed batch tells its lag from the source commit of its oldest change: at least the time from the
  // commit to this run's start, at most the time from it to the run's end.
  int with_lag = 0;
  std::istringstream events(r.out);
  for (std::string line; std::getline(events, line);) {
    auto event = nlohmann::json::parse(line);
    if (event["event"] != "batch_landed") continue;
    ASSERT_TRUE(event.contains("source_lag_seconds")) << line;
    EXPECT_GE(event["source_lag_seconds"].get<double>(), 0.0) << line;
    EXPECT_LE(event["source_lag_seconds"].get<double>(), run_seconds + 1) << line;
    ++with_lag;
  }
  EXPECT_GT(with_lag, 1);
  const std::string digest =
      "SET TIME ZONE 'UTC'; SELECT count(*), md5(string_agg(concat_ws('|', id, name, amount::text, "
      "(extract(epoch FROM at) * 1000000)::bigint, flag, doc::jsonb::text, ratio::real, wide, day, "
      "encode(blob, 'hex')), ',' ORDER BY id)) FROM {}";
  EXPECT_EQ(dbs.pg.query(dbs.dst, fmt::format(fmt::runtime(digest), "mirror.items")),
            dbs.pg.query(dbs.src, fmt::format(fmt::runtime(digest), "shop.items")));
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
  DropSlotsAtEnd drop_db_slots{pg, db};
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

// Pipelines (name, extra source parameters) from shop.items into mirror.p0, mirror.p1, ... (in that order).
std::string pipelines_config(const std::string& source_uri, const std::string& sink_uri,
                             const std::vector<std::pair<std::string, std::string>>& pipelines,
                             const std::string& mode = "snapshot_then_cdc") {
  std::string sources, sinks, runs;
  for (size_t i = 0; i < pipelines.size(); ++i) {
    const auto& [name, extra] = pipelines[i];
    const std::string table = fmt::format("p{}", i);
    sources += fmt::format("  app{}:\n    Postgres: {{ dsn: \"{}\", schema: shop, tables: [items], mode: {}{} }}\n", i,
                           source_uri, mode, extra.empty() ? "" : ", " + extra);
    sinks += fmt::format("  copy{}:\n    Postgres: {{ dsn: \"{}\", schema: mirror, table: {} }}\n", i, sink_uri, table);
    runs += fmt::format(
        "  {}:\n    data_source: data_sources.app{}\n    data_sink: data_sinks.copy{}\n    landing: merge_by_key\n"
        "    primary_key: id\n",
        name, i, i);
  }
  return "data_sources:\n" + sources + "data_sinks:\n" + sinks + "pipelines:\n" + runs;
}

std::vector<std::string> sync_of(const std::string& pipeline) { return {"sync", "--pipeline", pipeline, "--once"}; }

constexpr const char* kItemsDigest =
    "SET TIME ZONE 'UTC'; SELECT count(*), md5(string_agg(concat_ws('|', id, name, amount::text, "
    "(extract(epoch FROM at) * 1000000)::bigint, flag, doc::jsonb::text, ratio::real, wide, day, "
    "encode(blob, 'hex')), ',' ORDER BY id)) FROM {}";

std::string digest_of(const PostgresServer& pg, const std::string& db, const std::string& table) {
  const auto row = pg.query(db, fmt::format(fmt::runtime(kItemsDigest), table)).at(0);
  return row.at(0).value_or("NULL") + " " + row.at(1).value_or("NULL");
}

// Issue 23 item 5: "tp-a" and "tp_a" used to share slot skippr_tp_a, and the second one silently missed what the
// first had consumed.
TEST(PostgresCdc, PipelinesWhoseNamesDifferOnlyInPunctuationGetSlotsOfTheirOwnAndBothMirrorEveryChange) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 20));
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"tp-a", ""}, {"tp_a", ""}}));
  for (const char* name : {"tp-a", "tp_a"}) {
    auto r = fx.skipprd(sync_of(name));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
  dbs.pg.execute(dbs.src, "UPDATE shop.items SET name = 'changed' WHERE id <= 5; DELETE FROM shop.items WHERE id > 18");
  dbs.pg.execute(dbs.src, insert_items(21, 25));
  for (const char* name : {"tp-a", "tp_a"}) {
    auto r = fx.skipprd(sync_of(name));
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
  const std::string truth = digest_of(dbs.pg, dbs.src, "shop.items");
  EXPECT_EQ(digest_of(dbs.pg, dbs.dst, "mirror.p0"), truth) << "pipeline tp-a";
  EXPECT_EQ(digest_of(dbs.pg, dbs.dst, "mirror.p1"), truth) << "pipeline tp_a";
  EXPECT_EQ(
      dbs.pg.value(dbs.src,
                   "SELECT count(DISTINCT slot_name) FROM pg_replication_slots WHERE database = current_database() "
                   "AND slot_name LIKE 'skippr_tp_a_%'"),
      "2");
}

TEST(PostgresCdc, ASlotAlreadyReadByAnotherPipelineExitsTwoNamingBoth) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 5));
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst),
                                      {{"slot_owner", "slot: shared_slot"}, {"slot_thief", "slot: shared_slot"}}));
  auto r = fx.skipprd(sync_of("slot_owner"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = fx.skipprd(sync_of("slot_thief"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("replication slot shared_slot is already read by pipeline 'slot_owner'"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("pipeline 'slot_thief' cannot share it"), std::string::npos) << r.err;
  // The owner goes on as before.
  dbs.pg.execute(dbs.src, insert_items(6, 8));
  r = fx.skipprd(sync_of("slot_owner"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT count(*) FROM mirror.p0"), "8");
}

// A pipeline of an older version read slot skippr_<pipeline>: its position names that slot, and it keeps reading it
// (no change lost, no second slot) once the default name has changed.
TEST(PostgresCdc, APipelineWhosePositionNamesTheOldDefaultSlotKeepsReadingIt) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 10));
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst),
                                      {{"old-timer", "slot: skippr_old_timer, publication: skippr_old_timer"}}));
  auto r = fx.skipprd(sync_of("old-timer"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  write_text(fx.path("skippr.yml"), pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"old-timer", ""}}));
  dbs.pg.execute(dbs.src, "UPDATE shop.items SET name = 'later' WHERE id = 3");
  dbs.pg.execute(dbs.src, insert_items(11, 12));
  r = fx.skipprd(sync_of("old-timer"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(digest_of(dbs.pg, dbs.dst, "mirror.p0"), digest_of(dbs.pg, dbs.src, "shop.items"));
  EXPECT_EQ(dbs.pg.value(dbs.src,
                         "SELECT string_agg(slot_name, ',') FROM pg_replication_slots WHERE slot_name LIKE "
                         "'skippr_old_timer%'"),
            "skippr_old_timer");
}

// The slot's confirmed flush never passes a committed position of its own pipeline: when it has, someone else
// consumed the changes in between, and resuming would skip them silently.
TEST(PostgresCdc, ResumingBehindTheSlotsConfirmedFlushIsAConfigError) {
  const ItemsDatabase items("cdc");
  auto& pg = items.pg;
  const std::string& db = items.db;
  Reader first = open_reader(pg.uri(db), "cdc_only", "slot_ahead");
  first.until_drained();
  const Position old_position = first.position;
  pg.execute(db, insert_items(1, 5));
  for (int i = 0; i < 50 && first.rows.size() < 5; ++i) first.until_drained();
  ASSERT_EQ(first.rows.size(), 5u);
  ASSERT_TRUE(first.source->acknowledge(first.position));
  const auto confirmed = [&] {
    return pg.value(db, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'slot_ahead'");
  };
  const std::string before = confirmed();
  for (int i = 0; i < 50 && confirmed() == before; ++i) first.until_drained();
  first.source.reset();

  ConnectorContext ctx;
  ctx.name = "app";
  ctx.pipeline = "cdc_test";
  ctx.params = {{"dsn", pg.uri(db)},  {"schema", "shop"},     {"tables", {"items"}},
                {"mode", "cdc_only"}, {"slot", "slot_ahead"}, {"publication", "pub_items"}};
  auto source = find_connector("Postgres", true)->make_source(ctx);
  ASSERT_TRUE(source) << source.error().message;
  ASSERT_TRUE((*source)->open());
  auto st = (*source)->seek(old_position);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::kConfig);
  EXPECT_NE(st.error().message.find("replication slot slot_ahead has confirmed changes up to"), std::string::npos)
      << st.error().message;
}

// Issue 23 item 7: on a table without a key (REPLICA IDENTITY FULL), `primary_key: id` with duplicate ids made 3
// rows 2 in the destination, and exit 0.
constexpr const char* kKeylessItems =
    "CREATE SCHEMA shop; CREATE TABLE shop.items (id int NOT NULL, name text); ALTER TABLE shop.items REPLICA "
    "IDENTITY FULL";

TEST(PostgresCdc, APrimaryKeyWithoutAUniqueIndexIsAConfigErrorUnlessDeclaredUnique) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kKeylessItems);
  dbs.pg.execute(dbs.src, "INSERT INTO shop.items VALUES (1, 'a'), (1, 'b'), (2, 'c')");
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"keyless", ""}}));
  auto r = fx.skipprd(sync_of("keyless"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("primary_key (id) of table \"shop\".\"items\" is backed by no primary key or unique index"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("primary_key_unique: true"), std::string::npos) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.src, "SELECT count(*) FROM pg_replication_slots WHERE database = current_database()"),
            "0");

  // Declared unique: the snapshot finds the duplicate and stops (exit 1) before a row is written.
  PipelineFixture declared(
      pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"keyless_declared", "primary_key_unique: true"}}));
  r = declared.skipprd(sync_of("keyless_declared"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("2 rows of table \"shop\".\"items\" share primary_key (id) = (1), although "
                       "primary_key_unique is true"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT to_regclass('mirror.p0') IS NULL"), "t");

  // Declared and really unique: read and mirrored.
  const auto unique_src = dbs.pg.create_database("src");
  DropSlotsAtEnd drop_unique_src_slots{dbs.pg, unique_src};
  dbs.pg.execute(unique_src, kKeylessItems);
  dbs.pg.execute(unique_src, "INSERT INTO shop.items VALUES (1, 'a'), (3, 'b'), (2, 'c')");
  PipelineFixture unique(
      pipelines_config(dbs.pg.uri(unique_src), dbs.pg.uri(dbs.dst), {{"keyless_unique", "primary_key_unique: true"}}));
  r = unique.skipprd(sync_of("keyless_unique"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT string_agg(id || name, ',' ORDER BY id) FROM mirror.p0"), "1a,2c,3b");
}

TEST(PostgresCdc, APrimaryKeyBackedByAUniqueIndexIsAccepted) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kKeylessItems);
  dbs.pg.execute(dbs.src,
                 "CREATE UNIQUE INDEX ON shop.items (id); INSERT INTO shop.items VALUES (1, 'a'), (2, 'b'), (3, 'c')");
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"unique_index", ""}}));
  auto r = fx.skipprd(sync_of("unique_index"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dbs.pg.execute(dbs.src, "DELETE FROM shop.items WHERE id = 2");
  r = fx.skipprd(sync_of("unique_index"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT string_agg(id || name, ',' ORDER BY id) FROM mirror.p0"), "1a,3c");
}

// A table without a primary key keeps its default replica identity, which carries no key at all: the message says
// that (not "the replica identity is the table's primary key") and names the fix.
TEST(PostgresCdc, ATableWithoutAPrimaryKeyUnderDefaultIdentityNamesTheMissingKey) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src,
                 "CREATE SCHEMA shop; CREATE TABLE shop.items (id int NOT NULL, name text); CREATE UNIQUE INDEX ON "
                 "shop.items (id)");
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"no_pk", ""}}));
  auto r = fx.skipprd(sync_of("no_pk"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("has no primary key, so its default replica identity sends deletes and updates without any "
                       "key"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("REPLICA IDENTITY FULL"), std::string::npos) << r.err;
}

// Issue 23 item 11: a column's type changed in the source (ALTER COLUMN ... TYPE text) while the mirror keeps its
// BIGINT column. The run must not answer "retry later" forever: values that convert land, the others go to the
// rejects table with their reason, and the pipeline goes on.
TEST(PostgresCdc, AColumnTypeChangeInTheSourceLandsWhatConvertsAndRejectsTheRest) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src,
                 "CREATE SCHEMA shop; CREATE TABLE shop.items (id int PRIMARY KEY, name bigint); INSERT INTO "
                 "shop.items VALUES (1, 10), (2, 20), (3, 30)");
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"retyped", ""}}));
  auto r = fx.skipprd(sync_of("retyped"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dbs.pg.execute(dbs.src,
                 "ALTER TABLE shop.items ALTER COLUMN name TYPE text; UPDATE shop.items SET name = '21' "
                 "WHERE id = 2; UPDATE shop.items SET name = 'thirty' WHERE id = 3; INSERT INTO shop.items "
                 "VALUES (4, '40')");
  r = fx.skipprd(sync_of("retyped"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT string_agg(id || ':' || name, ',' ORDER BY id) FROM mirror.p0"),
            "1:10,2:21,3:30,4:40");
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT count(*) FROM mirror.p0__skippr_rejected WHERE record LIKE '%thirty%'"), "1");
}

// A table whose `big` values are stored out of line (TOASTed, uncompressed): an update that does not change them
// leaves them out of the stream under REPLICA IDENTITY DEFAULT.
constexpr const char* kCreateDocs =
    "CREATE SCHEMA shop; CREATE TABLE shop.docs (id int PRIMARY KEY, name text, big text); ALTER TABLE shop.docs "
    "ALTER COLUMN big SET STORAGE EXTERNAL; INSERT INTO shop.docs SELECT i, 'doc ' || i, repeat('x', 20000) || i "
    "FROM generate_series(1, 60) i";

std::string docs_config(const std::string& source_uri, const std::string& sink_uri, const std::string& pipeline) {
  return fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [docs], mode: snapshot_then_cdc }}
data_sinks:
  copy_db:
    Postgres: {{ dsn: "{}", schema: mirror, table: docs }}
pipelines:
  {}:
    data_source: data_sources.app
    data_sink: data_sinks.copy_db
    landing: merge_by_key
    primary_key: id
)",
                     source_uri, sink_uri, pipeline);
}

std::string docs_digest(const PostgresServer& pg, const std::string& db, const std::string& table) {
  return pg.value(db, fmt::format("SELECT count(*) || ' ' || md5(string_agg(concat_ws('|', id, name, length(big), "
                                  "md5(big)), ',' ORDER BY id)) || ' nulls ' || count(*) FILTER (WHERE big IS NULL) "
                                  "FROM {}",
                                  table));
}

// Issue 23 item 4: a primary-key update under REPLICA IDENTITY DEFAULT re-inserted the row under its new key with
// `big` NULL (exit 0), and an update of another column stopped every run (exit 2).
TEST(PostgresCdc, UnchangedToastedValuesAreFetchedByKeyAndNeverLandAsNull) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateDocs);
  PipelineFixture fx(docs_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), "toast_docs"));
  auto r = fx.skipprd(sync_of("toast_docs"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET name = 'renamed' WHERE id = 1");  // big left out of the stream
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET id = 102 WHERE id = 2");          // a key change: no old big either
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET id = 103, name = 'moved' WHERE id = 3");
  // Moved, then deleted by a later transaction: the row is gone when its big is fetched.
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET id = 104 WHERE id = 4");
  dbs.pg.execute(dbs.src, "DELETE FROM shop.docs WHERE id = 104");
  // Changed later: the later change wins.
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET name = 'first' WHERE id = 5");
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET big = repeat('y', 30000) WHERE id = 5");
  // Many rows in one transaction: fetched together.
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET name = name || ' bulk' WHERE id > 10");
  dbs.pg.execute(dbs.src, "UPDATE shop.docs SET id = id + 1000 WHERE id > 50");
  r = fx.skipprd(sync_of("toast_docs"), {{"BUFFER_THRESHOLD_BYTES", "50000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(docs_digest(dbs.pg, dbs.dst, "mirror.docs"), docs_digest(dbs.pg, dbs.src, "shop.docs"));
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT count(*) FROM mirror.docs WHERE big IS NULL"), "0");
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT name || ' ' || length(big) FROM mirror.docs WHERE id = 1102"),
            "doc 2 bulk 20001");
}

// Issue 23 items 10/12: "all replication slots are in use" is for the user to fix (exit 2), not "retry later" (75).
TEST(PostgresCdc, NoFreeReplicationSlotExitsTwoNamingTheLimitAndTheQueries) {
  PostgresServer one_slot(std::map<std::string, std::string>{{"max_replication_slots", "1"}});
  const auto db = one_slot.create_database("cdc");
  one_slot.execute(db, kCreateItems);
  one_slot.execute(db, "SELECT pg_create_logical_replication_slot('hog', 'pgoutput')");
  PipelineFixture fx(pipelines_config(one_slot.uri(db), one_slot.uri(db), {{"no_slot_left", ""}}));
  auto r = fx.skipprd(sync_of("no_slot_left"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("all replication slots are in use"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("raise max_replication_slots"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SELECT slot_name, database, active FROM pg_replication_slots"), std::string::npos) << r.err;
}

// Issue 23 item 10: an 'infinity' timestamp (snapshot or stream) failed every run with exit 1. It lands as NULL and
// the pipeline's dead-letter file says which row, column and value.
TEST(PostgresCdc, InfiniteTimestampsAndDatesLandAsNullWithADeadLetter) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 5));
  dbs.pg.execute(dbs.src, "UPDATE shop.items SET at = 'infinity' WHERE id = 1");  // read by the snapshot
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"infinite", ""}}));
  auto r = fx.skipprd(sync_of("infinite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  dbs.pg.execute(dbs.src, "UPDATE shop.items SET at = '-infinity', day = 'infinity', name = 'streamed' WHERE id = 2");
  dbs.pg.execute(dbs.src, "UPDATE shop.items SET name = 'next' WHERE id = 3");
  r = fx.skipprd(sync_of("infinite"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst,
                         "SELECT string_agg(concat_ws('|', id, name, at IS NULL, day IS NULL), ',' ORDER BY id) "
                         "FROM mirror.p0 WHERE id <= 3"),
            "1|item 1 é|t|f,2|streamed|t|t,3|next|f|f");
  const std::string letters = read_text(fx.path("data") / "pipelines" / "infinite" / "deadletter.jsonl");
  EXPECT_NE(letters.find("column \\\"at\\\" (timestamp with time zone) is 'infinity'"), std::string::npos) << letters;
  EXPECT_NE(letters.find("column \\\"at\\\" (timestamp with time zone) is '-infinity'"), std::string::npos) << letters;
  EXPECT_NE(letters.find("column \\\"day\\\" (date) is 'infinity'"), std::string::npos) << letters;
}

// Issue 23 items 6/10: a TRUNCATE in the stream stopped every run, RESET included (the slot keeps it). on_truncate:
// apply (the default) empties the destination of the older rows; stop says how to get past it; ignore goes on.
TEST(PostgresCdc, ATruncateIsAppliedOrStopsWithTheWaysForwardOrIsIgnored) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 5));
  PipelineFixture fx(pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"truncated", ""}}));
  auto r = fx.skipprd(sync_of("truncated"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Applied: rows before the truncate go, rows after it (same transaction too) stay.
  dbs.pg.execute(dbs.src, "BEGIN; UPDATE shop.items SET name = 'gone' WHERE id = 1; TRUNCATE shop.items; COMMIT");
  dbs.pg.execute(dbs.src, insert_items(6, 7));
  r = fx.skipprd(sync_of("truncated"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(digest_of(dbs.pg, dbs.dst, "mirror.p0"), digest_of(dbs.pg, dbs.src, "shop.items"));
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT string_agg(id::text, ',' ORDER BY id) FROM mirror.p0"), "6,7");

  write_text(fx.path("skippr.yml"),
             pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"truncated", "on_truncate: stop"}}));
  dbs.pg.execute(dbs.src, "TRUNCATE shop.items");
  dbs.pg.execute(dbs.src, insert_items(8, 9));
  r = fx.skipprd(sync_of("truncated"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("was truncated"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("set on_truncate: apply"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SELECT pg_drop_replication_slot('" + cdc_default_name("truncated") + "')"), std::string::npos)
      << r.err;

  write_text(fx.path("skippr.yml"),
             pipelines_config(dbs.pg.uri(dbs.src), dbs.pg.uri(dbs.dst), {{"truncated", "on_truncate: ignore"}}));
  r = fx.skipprd(sync_of("truncated"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dbs.pg.value(dbs.dst, "SELECT string_agg(id::text, ',' ORDER BY id) FROM mirror.p0"), "6,7,8,9");
}

// Issue 23 item 6: RESET after a dropped slot re-read the table, but rows deleted meanwhile stayed in the mirror.
// The end of a snapshot into merge_by_key removes every older row the snapshot did not read again.
void reset_after_a_dropped_slot_leaves_the_mirror_equal_to_the_source(bool duckdb) {
  const CdcDatabases dbs;
  dbs.pg.execute(dbs.src, kCreateItems);
  dbs.pg.execute(dbs.src, insert_items(1, 30));
  TempDir files;
  const std::string pipeline = duckdb ? "reset_duck" : "reset_pg";
  const std::string sink =
      duckdb ? fmt::format("DuckDB: {{ path: \"{}\", table: items }}", (files / "m.duckdb").string())
             : fmt::format("Postgres: {{ dsn: \"{}\", schema: mirror, table: p0 }}", dbs.pg.uri(dbs.dst));
  PipelineFixture fx(fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [items], mode: snapshot_then_cdc }}
data_sinks:
  out:
    {}
pipelines:
  {}:
    data_source: data_sources.app
    data_sink: data_sinks.out
    landing: merge_by_key
    primary_key: id
)",
                                 dbs.pg.uri(dbs.src), sink, pipeline));
  auto r = fx.skipprd(sync_of(pipeline));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The slot is dropped (by an operator, or max_slot_wal_keep_size): the deletes meanwhile are never streamed.
  dbs.pg.execute(dbs.src, fmt::format("SELECT pg_drop_replication_slot('{}')", cdc_default_name(pipeline)));
  dbs.pg.execute(dbs.src, "DELETE FROM shop.items WHERE id % 3 = 0; UPDATE shop.items SET name = 'later' WHERE id = 1");
  dbs.pg.execute(dbs.src, insert_items(31, 32));
  r = fx.skipprd(sync_of(pipeline));
  EXPECT_EQ(r.exit_code, 2) << r.err;  // "replication slot ... no longer exists ... RESET"
  r = fx.skipprd({"query", "--sql", "RESET PIPELINE " + pipeline});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = fx.skipprd(sync_of(pipeline));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string expected =
      dbs.pg.value(dbs.src, "SELECT count(*) || ' ' || string_agg(id || name, ',' ORDER BY id) FROM shop.items");
  const std::string landed =
      duckdb
          ? duckdb_rows(files / "m.duckdb",
                        "SELECT count(*) || ' ' || string_agg(id || name, ',' ORDER BY id) FROM items")
                .at(0)
                .at(0)
          : dbs.pg.value(dbs.dst, "SELECT count(*) || ' ' || string_agg(id || name, ',' ORDER BY id) FROM mirror.p0");
  EXPECT_EQ(landed, expected);
}

TEST(PostgresCdc, ResetAfterADroppedSlotLeavesAPostgresMirrorEqualToTheSource) {
  reset_after_a_dropped_slot_leaves_the_mirror_equal_to_the_source(false);
}

TEST(PostgresCdc, ResetAfterADroppedSlotLeavesADuckDbMirrorEqualToTheSource) {
  reset_after_a_dropped_slot_leaves_the_mirror_equal_to_the_source(true);
}

TEST(PostgresCdc, ATruncateInTheStreamEmptiesADuckDbMirrorToo) {
  auto& pg = SharedPostgres();
  const auto src = pg.create_database("src");
  DropSlotsAtEnd drop_src_slots{pg, src};
  pg.execute(src, kCreateItems);
  pg.execute(src, insert_items(1, 5));
  TempDir files;
  PipelineFixture fx(fmt::format(R"(data_sources:
  app:
    Postgres: {{ dsn: "{}", schema: shop, tables: [items], mode: snapshot_then_cdc }}
data_sinks:
  out:
    DuckDB: {{ path: "{}", table: items }}
pipelines:
  truncate_duck:
    data_source: data_sources.app
    data_sink: data_sinks.out
    landing: merge_by_key
    primary_key: id
)",
                                 pg.uri(src), (files / "m.duckdb").string()));
  auto r = fx.skipprd(sync_of("truncate_duck"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  pg.execute(
      src,
      "BEGIN; UPDATE shop.items SET name = 'gone' WHERE id = 1; TRUNCATE shop.items; INSERT INTO shop.items (id, "
      "name) VALUES (9, 'after'); COMMIT");
  pg.execute(src, "INSERT INTO shop.items (id, name) VALUES (10, 'later')");
  r = fx.skipprd(sync_of("truncate_duck"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(duckdb_rows(files / "m.duckdb", "SELECT string_agg(id || name, ',' ORDER BY id) FROM items").at(0).at(0),
            "9after,10later");
}

}  // namespace
}  // namespace skippr::test
