// The MySQL source against a real MariaDB 10.11: snapshot and incremental reads of several tables, and binlog CDC
// (snapshot_then_cdc, cdc_only) into DuckDB merged by each table's key: inserts, updates, deletes, TRUNCATE, a
// transaction over several tables, every column type, columns added and dropped mid-stream, rotation of the binlog.
// And what must stop a run with exit 2 before anything is read: a binlog not in ROW format, missing grants, a
// position the server has purged.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "support/duckdb_probe.h"
#include "support/mariadb_server.h"
#include "support/pipeline_fixture.h"

namespace skippr::test {
namespace {

// The sink's table: {stream} for a source of several tables, the one table's name otherwise.
std::string table_for(const std::string& tables) {
  if (tables.find_first_of(",*") != std::string::npos) return "{stream}";
  return tables.substr(1, tables.size() - 2);
}

std::string mysql_config(const std::string& dsn, const std::string& tables, const std::string& mode,
                         const std::string& duckdb, const std::string& extra_source = "",
                         const std::string& landing = "merge_by_key") {
  return fmt::format(R"(data_sources:
  shop:
    MySQL: {{ dsn: "{}", tables: {}, mode: {}{} }}
data_sinks:
  mirror:
    DuckDB: {{ path: "{}", table: "{}" }}
pipelines:
  mirror:
    data_source: data_sources.shop
    data_sink: data_sinks.mirror
    landing: {}
)",
                     dsn, tables, mode, extra_source, duckdb, table_for(tables), landing);
}

std::string rows_text(const std::vector<std::vector<std::string>>& rows) {
  std::string out;
  for (const auto& row : rows) out += fmt::format("{}\n", fmt::join(row, "|"));
  return out;
}

std::string source_text(const MariaDbServer& db, const std::string& database, const std::string& sql) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : db.query(database, sql)) {
    auto& out = rows.emplace_back();
    for (const auto& v : row) out.push_back(v.value_or("NULL"));
  }
  return rows_text(rows);
}

TEST(MySqlSource, SnapshotThenCdcFollowsEveryKindOfChangeAcrossTablesIntoDuckDb) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("shop");
  db.execute_all(src,
                 {"CREATE TABLE orders (id INT PRIMARY KEY, customer VARCHAR(40), total DECIMAL(12,2))",
                  "CREATE TABLE order_lines (order_id INT, line INT, sku VARCHAR(20), qty INT, PRIMARY KEY (order_id, "
                  "line))",
                  "CREATE TABLE notes (id BIGINT PRIMARY KEY, body TEXT)"});
  for (int i = 1; i <= 50; ++i) {
    db.execute_all(src,
                   {fmt::format("INSERT INTO orders VALUES ({0}, 'c{0}', {0}.25)", i),
                    fmt::format("INSERT INTO order_lines VALUES ({0}, 1, 'sku{0}', {0}), ({0}, 2, 'extra', 1)", i)});
  }
  TempDir out;
  PipelineFixture fx(
      mysql_config(db.dsn(src), "[orders, order_lines, notes]", "snapshot_then_cdc", (out / "m.duckdb").string()));
  auto first = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(duckdb_value(out / "m.duckdb", "SELECT count(*) FROM orders"), "50");
  EXPECT_EQ(duckdb_value(out / "m.duckdb", "SELECT count(*) FROM order_lines"), "100");

  // One transaction over two tables, then updates, deletes, a key change, a truncate and a table that was empty.
  db.execute_all(src, {"START TRANSACTION", "INSERT INTO orders VALUES (51, 'new', 9.99)",
                       "INSERT INTO order_lines VALUES (51, 1, 'skuX', 3)",
                       "UPDATE orders SET total = total + 1 WHERE id <= 5", "COMMIT"});
  db.execute_all(src, {"DELETE FROM order_lines WHERE line = 2 AND order_id % 2 = 0",
                       "UPDATE orders SET id = 1000 WHERE id = 7", "UPDATE orders SET customer = NULL WHERE id = 8",
                       "INSERT INTO notes VALUES (1, 'hello'), (2, 'x')", "TRUNCATE TABLE notes",
                       "INSERT INTO notes VALUES (3, 'after the truncate')", "DELETE FROM orders WHERE id = 9"});
  // Enough to rotate the 1 MiB binlog a few times.
  db.execute(src, "CREATE TABLE bulk (id INT PRIMARY KEY, pad TEXT)");
  for (int i = 0; i < 4; ++i) {
    db.execute(src, fmt::format("INSERT INTO bulk SELECT seq, REPEAT('x', 1000) FROM seq_{}_to_{}", i * 1000 + 1,
                                (i + 1) * 1000));
  }
  db.execute(src, "UPDATE orders SET customer = 'after rotation' WHERE id = 10");
  auto second = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(
      rows_text(duckdb_rows(out / "m.duckdb", "SELECT id, coalesce(customer, 'NULL'), total FROM orders ORDER BY id")),
      source_text(db, src, "SELECT id, coalesce(customer, 'NULL'), total FROM orders ORDER BY id"));
  EXPECT_EQ(rows_text(duckdb_rows(out / "m.duckdb", "SELECT order_id, line, sku, qty FROM order_lines ORDER BY 1, 2")),
            source_text(db, src, "SELECT order_id, line, sku, qty FROM order_lines ORDER BY 1, 2"));
  EXPECT_EQ(rows_text(duckdb_rows(out / "m.duckdb", "SELECT id, body FROM notes ORDER BY id")),
            source_text(db, src, "SELECT id, body FROM notes ORDER BY id"));
  // The committed position names the binlog file and offset after the last transaction, and beside them the GTID
  // position the server itself gives for that point.
  auto shown = fx.skipprd({"query", "--output", "json", "--sql", "SHOW PIPELINE mirror"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  nlohmann::json position;
  for (size_t at = 0, end; at < shown.out.size(); at = end + 1) {
    end = std::min(shown.out.find('\n', at), shown.out.size());
    const auto line = nlohmann::json::parse(shown.out.substr(at, end - at), nullptr, false);
    if (line.is_object() && line.value("property", "") == "source_position") {
      position = nlohmann::json::parse(line.value("value", ""), nullptr, false);
    }
  }
  ASSERT_TRUE(position.is_object()) << shown.out;
  EXPECT_EQ(position.value("file", ""), db.query("", "SHOW MASTER STATUS").at(0).at(0).value_or(""));
  EXPECT_EQ(position.value("gtid", ""), db.value("", "SELECT @@gtid_binlog_pos"));
}

// Every column type, read once by the snapshot and once from the binlog: the same values must land the same way, and
// the values that need care (unsigned BIGINT beyond int64, exact decimals, negative TIME, fractions, BIT, SET,
// geometry, binary padding, zero dates) land as documented.
TEST(MySqlSource, EveryTypeLandsTheSameFromTheSnapshotAndFromTheBinlog) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("types");
  db.execute(src,
             "CREATE TABLE types (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, mi MEDIUMINT, "
             "mu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, "
             "dec1 DECIMAL(30,10), dec2 DECIMAL(5,0), dec3 DECIMAL(4,4), dt DATE, dtm DATETIME(6), dtm0 DATETIME, "
             "ts TIMESTAMP(3) NULL, tm TIME(2), tm0 TIME, y YEAR, c CHAR(5), vc VARCHAR(300), tx TEXT, bin BINARY(4), "
             "vb VARBINARY(10), bl BLOB, j JSON, e ENUM('red','green','blue'), st SET('a','b','c','d'), b1 BIT(1), "
             "b12 BIT(12), b64 BIT(64), g GEOMETRY, p POINT)");
  const std::string values[] = {
      "-128, 255, -32768, -8388608, 16777215, -2147483648, 4294967295, -9223372036854775808, "
      "18446744073709551615, 1.1, 0.1, -12345678901234567890.0123456789, 99999, -0.5, '1969-12-31', "
      "'2024-02-29 23:59:59.999999', '1000-01-01 00:00:00', '2038-01-19 03:14:07.999', '-838:59:59.00', "
      "'12:34:56', 1901, 'ab', 'h\u00e9llo \u2603', REPEAT('t', 1000), 'ab', x'00ff', x'000102', '{\"a\": [1, 2]}', "
      "'green', 'a,d', b'1', b'101010101010', x'FFFFFFFFFFFFFFFF', ST_GeomFromText('POINT(1 2)'), "
      "ST_GeomFromText('POINT(3.5 -4)')",
      "127, 0, 32767, 8388607, 0, 2147483647, 0, 9223372036854775807, 0, -3.4028234e38, "
      "1.7976931348623157e308, 0.0000000001, -1, 0.0001, '9999-12-31', '1970-01-01 00:00:00.000001', "
      "'2024-01-01 12:00:00', '1970-01-01 00:00:01.000', '00:00:00.01', '-00:00:01', 2155, '', '', '', x'00000000', "
      "'', '', '[]', 'red', '', b'0', b'0', x'00', ST_GeomFromText('LINESTRING(0 0, 1 1)'), "
      "ST_GeomFromText('POINT(0 0)')",
      "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
      "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL",
      "0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '0000-00-00', '0000-00-00 00:00:00', '2024-00-10 00:00:00', "
      "'0000-00-00 00:00:00', '00:00:00', '00:00:00', 0, 'x', 'x', 'x', 'x', 'x', 'x', '{}', 'blue', 'b,c', b'1', "
      "b'1', x'01', ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(0 0)')"};
  const std::string zero_dates = "SET SESSION sql_mode = ''";  // this server allows zero dates only so
  for (int i = 0; i < 4; ++i) {
    db.execute_all(src, {zero_dates, fmt::format("INSERT INTO types VALUES ({}, {})", i + 1, values[i])});
  }
  TempDir out;
  const auto duck = out / "t.duckdb";
  PipelineFixture fx(mysql_config(db.dsn(src), "[types]", "snapshot_then_cdc", duck.string(), "",
                                  "merge_by_key\n    primary_key: [id]"));
  auto first = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (int i = 0; i < 4; ++i) {
    db.execute_all(src, {zero_dates, fmt::format("INSERT INTO types VALUES ({}, {})", i + 11, values[i])});
  }
  auto second = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_EQ(duckdb_value(duck, "SELECT count(*) FROM types"), "8");
  const std::string columns =
      "ti, tu, si, mi, mu, i, iu, bi, bu, f, d, dec1, dec2, dec3, dt, dtm, dtm0, ts, tm, tm0, y, c, vc, "
      "md5(tx), hex(bin), hex(vb), hex(bl), j, e, st, b1, b12, b64, hex(g), hex(p)";
  for (int i = 1; i <= 4; ++i) {
    const auto snapshot = duckdb_rows(duck, fmt::format("SELECT {} FROM types WHERE id = {}", columns, i));
    const auto streamed = duckdb_rows(duck, fmt::format("SELECT {} FROM types WHERE id = {}", columns, i + 10));
    EXPECT_EQ(rows_text(streamed), rows_text(snapshot))
        << "row " << i << " (snapshot) against " << i + 10 << " (binlog)";
  }
  // The values that need care, as they must land.
  const auto row1 =
      duckdb_rows(duck,
                  "SELECT bu, dec1, dec3, tm, ts::VARCHAR, dtm::VARCHAR, typeof(dt), dt::VARCHAR, bi, f, hex(bin), "
                  "b12, b64, hex(p), st, vc, j::VARCHAR, typeof(j) FROM types WHERE id = 11");
  EXPECT_EQ(rows_text(row1),
            "18446744073709551615|-12345678901234567890.0123456789|-0.5000|-838:59:59.00|2038-01-19 "
            "03:14:07.999+00|2024-02-29 23:59:59.999999+00|DATE|1969-12-31|-9223372036854775808|1.100000023841858|"
            "61620000|2730|18446744073709551615|01010000000000000000000C4000000000000010C0|a,d|h\u00e9llo "
            "\u2603|{\"a\": [1, 2]}|JSON\n");
  // The zero dates landed as NULL, each with a dead letter (snapshot and binlog alike).
  EXPECT_EQ(duckdb_value(duck,
                         "SELECT count(*) FROM types WHERE id IN (4, 14) AND dt IS NULL AND dtm IS NULL AND "
                         "dtm0 IS NULL AND ts IS NULL"),
            "2");
  const std::string letters = read_text(fx.path("data") / "pipelines" / "mirror" / "deadletter.jsonl");
  size_t zero = 0;
  for (size_t at = letters.find("zero date"); at != std::string::npos; at = letters.find("zero date", at + 1)) ++zero;
  EXPECT_EQ(zero, 8u) << letters;
}

// Columns added and dropped while the stream runs: rows before and after each change land right.
TEST(MySqlSource, ColumnsAddedAndDroppedMidStreamLandRight) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("ddl");
  db.execute_all(src, {"CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), n INT)",
                       "INSERT INTO t VALUES (1, 'a1', 1), (2, 'a2', 2)"});
  TempDir out;
  const auto duck = out / "d.duckdb";
  PipelineFixture fx(
      mysql_config(db.dsn(src), "[t]", "snapshot_then_cdc", duck.string(), "", "merge_by_key\n    primary_key: [id]"));
  auto first = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  db.execute_all(
      src, {"INSERT INTO t VALUES (3, 'a3', 3)", "ALTER TABLE t ADD COLUMN b VARCHAR(10) AFTER id",
            "INSERT INTO t VALUES (4, 'b4', 'a4', 4)", "UPDATE t SET b = 'b1' WHERE id = 1",
            "ALTER TABLE t DROP COLUMN a", "INSERT INTO t VALUES (5, 'b5', 5)", "UPDATE t SET n = 20 WHERE id = 2",
            "ALTER TABLE t MODIFY COLUMN n BIGINT", "INSERT INTO t VALUES (6, 'b6', 6000000000)"});
  auto second = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(rows_text(duckdb_rows(duck, "SELECT id, coalesce(b, 'NULL'), n FROM t ORDER BY id")),
            source_text(db, src, "SELECT id, coalesce(b, 'NULL'), n FROM t ORDER BY id"));
  // `a` is gone from the source: rows last changed before the drop keep it, the later ones have none.
  EXPECT_EQ(rows_text(duckdb_rows(duck, "SELECT id, coalesce(a, 'NULL') FROM t ORDER BY id")),
            "1|a1\n2|NULL\n3|a3\n4|a4\n5|NULL\n6|NULL\n");
}

TEST(MySqlSource, SnapshotAndIncrementalModesReadSeveralTables) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("plain");
  db.execute_all(src, {"CREATE TABLE a (id INT PRIMARY KEY, v INT, updated BIGINT)",
                       "CREATE TABLE b (k VARCHAR(10) PRIMARY KEY, v INT, updated BIGINT)",
                       // A binary key (a UUID's 16 bytes): kept in the position as hex.
                       "CREATE TABLE c (k BINARY(16) PRIMARY KEY, v INT, updated BIGINT)",
                       "INSERT INTO c SELECT UNHEX(MD5(seq)), seq, seq % 3 FROM seq_1_to_300"});
  for (int i = 1; i <= 300; ++i) {
    db.execute_all(src, {fmt::format("INSERT INTO a VALUES ({0}, {0}, {1})", i, i % 7),
                         fmt::format("INSERT INTO b VALUES ('k{0:04}', {0}, {1})", i, i % 5)});
  }
  TempDir out;
  PipelineFixture snap(mysql_config(db.dsn(src), "[a, b, c]", "snapshot", (out / "s.duckdb").string(), "", "append"));
  auto s = snap.skipprd({"sync", "--pipeline", "mirror", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "4000"}});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(duckdb_value(out / "s.duckdb", "SELECT count(*) || '/' || count(DISTINCT id) || '/' || sum(v) FROM a"),
            "300/300/45150");
  EXPECT_EQ(duckdb_value(out / "s.duckdb", "SELECT count(*) || '/' || count(DISTINCT k) FROM b"), "300/300");
  EXPECT_EQ(duckdb_value(out / "s.duckdb", "SELECT count(*) || '/' || count(DISTINCT k) || '/' || sum(v) FROM c"),
            "300/300/45150");

  PipelineFixture inc(mysql_config(db.dsn(src), "[a, b, c]", "incremental", (out / "i.duckdb").string(),
                                   ", cursor_column: updated", "append"));
  auto i1 = inc.skipprd({"sync", "--pipeline", "mirror", "--once"}, {{"BUFFER_THRESHOLD_BYTES", "4000"}});
  ASSERT_EQ(i1.exit_code, 0) << i1.err;
  db.execute_all(src, {"UPDATE a SET v = -v, updated = 100 WHERE id <= 10", "INSERT INTO b VALUES ('new', 1, 100)"});
  auto i2 = inc.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(i2.exit_code, 0) << i2.err;
  EXPECT_EQ(duckdb_value(out / "i.duckdb", "SELECT count(*) FROM a"), "310");
  EXPECT_EQ(duckdb_value(out / "i.duckdb", "SELECT count(*) FROM a WHERE v < 0"), "10");
  EXPECT_EQ(duckdb_value(out / "i.duckdb", "SELECT count(*) FROM b"), "301");
  EXPECT_EQ(duckdb_value(out / "i.duckdb", "SELECT count(*) || '/' || count(DISTINCT k) FROM c"), "300/300");
}

// What stops a CDC run with exit 2 before anything is read or written, each saying what to change.
TEST(MySqlSource, ServerSettingsGrantsAndAPurgedPositionStopWithExit2) {
  TempDir out;
  {
    MariaDbServer mixed(std::map<std::string, std::string>{{"binlog-format", "MIXED"}});
    const auto src = mixed.create_database("m");
    mixed.execute(src, "CREATE TABLE t (id INT PRIMARY KEY)");
    PipelineFixture fx(
        mysql_config(mixed.dsn(src), "[t]", "snapshot_then_cdc", (out / "x.duckdb").string(), "", "append"));
    auto r = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("binlog_format = ROW"), std::string::npos) << r.err;
    mixed.execute_all("", {"SET GLOBAL binlog_format = 'ROW'", "SET GLOBAL binlog_row_metadata = 'MINIMAL'"});
    r = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("binlog_row_metadata = FULL"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out / "x.duckdb")) << "nothing may be written";
  }
  auto& db = SharedMariaDb();
  const auto src = db.create_database("limits");
  db.execute_all(src, {"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
                       "CREATE USER IF NOT EXISTS 'reader'@'%' IDENTIFIED BY 'reader-pw'",
                       fmt::format("GRANT SELECT ON {}.* TO 'reader'@'%'", src)});
  const std::string reader_dsn = fmt::format("mysql://reader:reader-pw@127.0.0.1:{}/{}", db.port(), src);
  PipelineFixture limited(
      mysql_config(reader_dsn, "[t]", "snapshot_then_cdc", (out / "g.duckdb").string(), "", "append"));
  auto g = limited.skipprd({"sync", "--pipeline", "mirror", "--once"});
  EXPECT_EQ(g.exit_code, 2) << g.err;
  EXPECT_NE(g.err.find("GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'reader'@'%'"), std::string::npos)
      << g.err;
  EXPECT_EQ(g.err.find("reader-pw"), std::string::npos) << "no secret in a message";

  // A pipeline that stood still while its binlog file was purged.
  PipelineFixture fx(mysql_config(db.dsn(src), "[t]", "cdc_only", (out / "p.duckdb").string(), "", "append"));
  auto first = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  db.execute_all(
      src, {"INSERT INTO t VALUES (2, 2)", "FLUSH BINARY LOGS", "INSERT INTO t VALUES (3, 3)", "FLUSH BINARY LOGS"});
  const std::string current = db.query("", "SHOW MASTER STATUS").at(0).at(0).value_or("");
  // MariaDB keeps a file until InnoDB has checkpointed past it (binlog checkpoint): purge until it is gone.
  for (int i = 0; i < 100 && db.query("", "SHOW BINARY LOGS").front().at(0).value_or("") != current; ++i) {
    db.execute("", "PURGE BINARY LOGS TO '" + current + "'");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(db.query("", "SHOW BINARY LOGS").front().at(0).value_or(""), current) << "the server kept its old binlogs";
  auto purged = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  EXPECT_EQ(purged.exit_code, 2) << purged.err;
  EXPECT_NE(purged.err.find("is no longer on the server (purged"), std::string::npos) << purged.err;
  EXPECT_NE(purged.err.find("RESET PIPELINE mirror"), std::string::npos) << purged.err;
}

// The dump connection cut by the server while a large transaction is being read (KILL of the Binlog Dump thread):
// the run stops without committing part of it, and the next one reads it again from its start, whole, once.
TEST(MySqlSource, ADumpCutInsideATransactionIsReadAgainWholeAndOnce) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("cut");
  db.execute(src, "CREATE TABLE big (id INT PRIMARY KEY, v VARCHAR(20))");
  TempDir out;
  const auto duck = out / "c.duckdb";
  PipelineFixture fx(mysql_config(db.dsn(src), "[big]", "cdc_only", duck.string(), "", "append"));
  auto pin = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(pin.exit_code, 0) << pin.err;
  db.execute(src, "INSERT INTO big SELECT seq, CONCAT('v', seq) FROM seq_1_to_300000");  // one transaction
  ProcessResult cut;
  std::jthread run([&] { cut = fx.skipprd({"sync", "--pipeline", "mirror", "--once"}); });
  bool killed = false;
  for (int i = 0; i < 400 && !killed; ++i) {
    const auto dumps = db.query("", fmt::format("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = "
                                                "'Binlog Dump' AND DB = '{}'",
                                                src));
    if (!dumps.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      try {
        db.execute("", "KILL " + dumps[0][0].value_or("0"));
        killed = true;
      } catch (const std::exception&) {  // the dump ended by itself meanwhile
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.join();
  ASSERT_TRUE(killed) << "no dump to cut: " << cut.err;
  // The cut run stopped on the lost connection (exit 75: try again) unless it had read the whole transaction first.
  EXPECT_TRUE(cut.exit_code == 75 || cut.exit_code == 0) << cut.exit_code << ": " << cut.err;
  std::cout << "the cut run exited " << cut.exit_code << "\n";
  auto again = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(duckdb_value(duck, "SELECT count(*) || '/' || count(DISTINCT id) || '/' || sum(id) FROM big"),
            "300000/300000/45000150000");
}

// The machine and its DATA_DIR gone: the next run resumes from the position the destination's ledger holds, so an
// append destination receives neither the snapshot again nor a change twice.
TEST(MySqlSource, ALostDataDirResumesFromTheDestinationsLedger) {
  auto& db = SharedMariaDb();
  const auto src = db.create_database("lost");
  db.execute_all(src,
                 {"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t SELECT seq, seq FROM seq_1_to_100"});
  TempDir out;
  const auto duck = out / "l.duckdb";
  PipelineFixture fx(mysql_config(db.dsn(src), "[t]", "snapshot_then_cdc", duck.string(), "", "append"));
  auto first = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  db.execute_all(src, {"INSERT INTO t SELECT seq, seq FROM seq_101_to_110", "UPDATE t SET v = -v WHERE id <= 5"});
  auto second = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_EQ(duckdb_value(duck, "SELECT count(*) FROM t"), "115");
  std::filesystem::remove_all(fx.path("data"));
  db.execute_all(src, {"INSERT INTO t VALUES (111, 111), (112, 112), (113, 113)", "DELETE FROM t WHERE id IN (1, 2)"});
  auto third = fx.skipprd({"sync", "--pipeline", "mirror", "--once"});
  ASSERT_EQ(third.exit_code, 0) << third.err;
  // 100 snapshot rows, 15 changes, then 5 more: each once.
  EXPECT_EQ(duckdb_value(duck, "SELECT count(*) FROM t"), "120");
  EXPECT_EQ(duckdb_value(duck, "SELECT count(*) FROM t WHERE id > 110"), "3");
}

}  // namespace
}  // namespace skippr::test
