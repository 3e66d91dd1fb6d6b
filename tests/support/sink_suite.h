// The scenarios every sink must pass, written once (tests/support/sink_suite.cc) and run against each sink that can
// run here: every row once and a second run adding nothing, a replayed batch recognised as landed, several streams in
// tables (or folders) of their own under kills and lost DATA_DIRs, merge_by_key over a re-read, rejects, a kill loop
// equal to an unkilled run, and setup mistakes stopping with exit 2 and no secret. A sink opts in with one line in its
// test area:
//
//   INSTANTIATE_SINK_SUITE(BigQuery, bigquery_under_test());
//
// where the function returns its SinkUnderTest: how to name it in skippr.yml and how to read back what it landed. A
// scenario a sink has no part in (rejects for an object store) is skipped, saying why.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/pipeline_fixture.h"

namespace skippr::test {

// A configuration the sink must refuse before anything is read: the sink's YAML flow line, a piece of the message it
// must give, and a secret (or "") that must appear in no output.
struct SetupMistake {
  std::string sink;
  std::string says;
  std::string secret;
};

struct SinkUnderTest {
  std::string name;  // for messages: "BigQuery"
  // The sink as one YAML flow line (sample_to_sink_config) that lands in `where`: a table, or for a sink of `folders`
  // the prefix (or folder) its objects go under. `where` may hold {stream}.
  std::function<std::string(const std::string& where)> sink;
  // Every row landed in `where` (one stream's table, or its prefix), each as `columns` rendered as text by the
  // destination (NULL as "NULL") and joined by '|'. `f` is the fixture that ran the pipeline.
  std::function<std::vector<std::string>(const PipelineFixture& f, const std::string& where,
                                         const std::vector<std::string>& columns)>
      rows;
  // Instead of rows, for a destination a reader of its own digests (an Iceberg table): (rows, distinct values of the
  // column `key`, a content hash over every column) of `where`. Scenarios that need single values then skip.
  std::function<std::tuple<uint64_t, uint64_t, std::string>(const PipelineFixture& f, const std::string& where,
                                                            const std::string& key)>
      digest;
  std::map<std::string, std::string> env;  // for every skipprd run: endpoints, credentials
  bool folders = false;                    // streams land in folders of a prefix (object stores), not tables
  bool lands_streams = false;              // ConnectorSpec::lands_streams
  bool merges = false;                     // landing: merge_by_key
  // Delivers a replayed batch again under the same ids (a broker: AMQP), for the consumer to drop by id; `rows` gives
  // what such a consumer keeps. The replay scenario then checks the rows, not that the run said "already applied".
  bool at_least_once = false;
  // Keeps stream names as written in where it lands them (AMQP routing keys): no two streams ever share a place.
  bool keeps_stream_names = false;
  // Lands a batch's tables one after another, with the failpoint sink.between_tables between two of them, and a
  // record of the batch that a run with a lost DATA_DIR finishes first (it says "finishing batch").
  bool lands_tables_one_by_one = false;
  // The ledger of `table` (rows, distinct batch ids); unset for a sink without one (at least once or overwrite on
  // retry, no lost-DATA_DIR resume). With it the kill loops also delete DATA_DIR now and then.
  std::function<std::pair<uint64_t, uint64_t>(const PipelineFixture& f, const std::string& table)> ledger;
  // Makes `table` with columns trip_id BIGINT and duration_s BIGINT, so the Sample's fractional durations are
  // rejected into <table>__skippr_rejected; unset for a sink without a rejects table.
  std::function<void(const PipelineFixture& f, const std::string& table)> make_narrow_table;
  // Checked after every landing a scenario finished (no staging table left behind, ...); may be unset.
  std::function<void(const PipelineFixture& f, const std::string& where)> after_landing;
  // After the kill loop's comparison: what the sink must also survive (BigQuery sweeps stages a killed run left).
  std::function<void(const PipelineFixture& f, const std::string& where, const std::map<std::string, std::string>& env)>
      after_kill_loop;
  std::vector<SetupMistake> mistakes;
  uint64_t kill_loop_rows = 100000;
  int min_kills = 15;
  // Runs of the kill loop killed inside the sink's own landing first (chaos_loop.h's kill_inside_landing): for a sink
  // without one transaction around its statements.
  int kills_inside_landing = 0;
  double chaos_min_seconds = 0.2;
  double chaos_max_seconds = 1.5;
};

class SinkSuite : public ::testing::TestWithParam<const SinkUnderTest*> {
 protected:
  const SinkUnderTest& sut() const { return *GetParam(); }
};

// Helpers for SinkUnderTest::rows: the columns as a SELECT list, each quoted with `quote` and cast to VARCHAR; and rows
// of text values (NULL as "NULL", or nullopt) joined by '|'.
std::string select_list(const std::vector<std::string>& columns, char quote = '"');
std::vector<std::string> joined_rows(const std::vector<std::vector<std::string>>& rows);
std::vector<std::string> joined_rows(const std::vector<std::vector<std::optional<std::string>>>& rows);

// The rows of every Parquet file directly in `folder` (none, or no folder: no rows), `columns` as DuckDB renders them.
std::vector<std::string> parquet_rows(const std::filesystem::path& folder, const std::vector<std::string>& columns);

// Rows and ledger for a sink whose tables are in `schema` of database `db` on the binary's PostgreSQL server
// (Postgres itself, and the Redshift and Synapse emulators, which run their statements there); the ledger names a
// table "schema"."t", [schema].[t], schema."t" or schema.t.
void read_from_postgres(SinkUnderTest& s, const std::string& db, const std::string& schema);

// A sink that writes one Parquet object per batch under a prefix (S3, GCS, AzureBlob, SFTP, File): `sink` makes its
// YAML for a prefix ending in '/', `fetch` copies every object under such a prefix into `dir` and returns the folder
// that holds them there (stores name downloads differently). Rows are read back from the copies, and every object must
// be named after its batch (no temporary or partial object is ever visible).
SinkUnderTest object_store_under_test(
    std::string name, std::function<std::string(const std::string& prefix)> sink,
    std::function<std::filesystem::path(const std::string& prefix, const std::filesystem::path& dir)> fetch);

// Pulls the scenarios (sink_suite.cc) into the test binary that instantiates them.
bool sink_suite_linked();

#define INSTANTIATE_SINK_SUITE(Name, under_test)                                                   \
  [[maybe_unused]] static const bool kSinkSuiteLinked##Name = ::skippr::test::sink_suite_linked(); \
  INSTANTIATE_TEST_SUITE_P(                                                                        \
      Name, SinkSuite, ::testing::Values(&(under_test)),                                           \
      [](const ::testing::TestParamInfo<const ::skippr::test::SinkUnderTest*>&) { return std::string(#Name); })

}  // namespace skippr::test
