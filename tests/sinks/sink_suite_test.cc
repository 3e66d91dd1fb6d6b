// The sink suite (tests/support/sink_suite.h) on DuckDB (a file in each test's folder) and PostgreSQL (the binary's
// server, a database of its own).
#include <fmt/format.h>

#include "support/duckdb_probe.h"
#include "support/postgres_server.h"
#include "support/sink_suite.h"

namespace skippr::test {
namespace {

const SinkUnderTest& duckdb_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "DuckDB";
    s.sink = [](const std::string& where) {
      return fmt::format(R"(DuckDB: {{ path: out.duckdb, table: "{}" }})", where);
    };
    s.rows = [](const PipelineFixture& f, const std::string& table, const std::vector<std::string>& columns) {
      return joined_rows(
          duckdb_rows(f.path("out.duckdb"), fmt::format(R"(SELECT {} FROM "{}")", select_list(columns), table)));
    };
    s.lands_streams = true;
    s.merges = true;
    s.ledger = [](const PipelineFixture& f, const std::string& table) {
      const auto row = duckdb_rows(f.path("out.duckdb"),
                                   fmt::format("SELECT count(*), count(DISTINCT batch_id) FROM _skippr_batches WHERE "
                                               "target_table = lower('{}')",
                                               table))
                           .at(0);
      return std::pair<uint64_t, uint64_t>(std::stoull(row[0]), std::stoull(row[1]));
    };
    s.make_narrow_table = [](const PipelineFixture& f, const std::string& table) {
      duckdb_write(f.path("out.duckdb"),
                   fmt::format(R"(CREATE TABLE "{}" (trip_id BIGINT, duration_s BIGINT))", table));
    };
    s.mistakes = {
        {"DuckDB: { path: out.duckdb }", "table is missing", ""},
        {R"(DuckDB: { path: out.duckdb, table: "t_{stream}" })", "holds {stream}", ""},
        {"DuckDB: { path: out.duckdb, table: t, memory_limit: lots }", "memory_limit", ""},
    };
    return s;
  }();
  return sut;
}

const std::string& suite_database() {
  static const std::string db = SharedPostgres().create_database("suite");
  return db;
}

const SinkUnderTest& postgres_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "Postgres";
    s.sink = [](const std::string& where) {
      return fmt::format(R"(Postgres: {{ dsn: "{}", schema: suite, table: "{}" }})",
                         SharedPostgres().uri(suite_database()), where);
    };
    read_from_postgres(s, suite_database(), "suite");
    s.lands_streams = true;
    s.merges = true;
    s.make_narrow_table = [](const PipelineFixture&, const std::string& table) {
      SharedPostgres().execute(suite_database(), fmt::format(R"(CREATE SCHEMA IF NOT EXISTS suite;
                                                  CREATE TABLE suite."{}" (trip_id bigint, duration_s bigint))",
                                                             table));
    };
    s.mistakes = {
        {fmt::format(
             R"(Postgres: {{ dsn: "postgresql://nobody:hunter2secret@127.0.0.1:{}/postgres", schema: s, table: t }})",
             SharedPostgres().port()),
         "nobody", "hunter2secret"},
        {R"(Postgres: { dsn: "postgresql://u@127.0.0.1/x", schema: s })", "table is missing", ""},
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(DuckDB, duckdb_under_test());
INSTANTIATE_SINK_SUITE(Postgres, postgres_under_test());

}  // namespace skippr::test
