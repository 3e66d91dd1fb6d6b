// The Glue-catalogued lakes against moto_server (S3 and Glue): AthenaIceberg passes the sink suite (every row once as
// icebird reads it, under SIGKILLs and lost DATA_DIRs, with the Glue table naming the current metadata file, a table
// per stream); Athena (Hive Parquet) under SIGKILLs
// has every partition folder registered in Glue and exactly the rows of an unkilled run in its objects.
// moto's UpdateTable ignores VersionId, so a lost Glue race cannot be produced here (the folder/S3 catalog's race
// test in skippr_lake_test.cc covers the writer's retry on a new base).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "support/chaos_loop.h"
#include "support/duckdb_probe.h"
#include "support/iceberg_reader.h"
#include "support/moto_server.h"
#include "support/pipeline_fixture.h"
#include "support/sink_suite.h"
#include "support/stream_files.h"

namespace skippr::test {
namespace {

// `aws glue <args>` against moto; `must` = false: a failure (no such table) gives JSON null instead of a failed test.
nlohmann::json glue(const MotoServer& moto, const std::vector<std::string>& args, bool must = true) {
  std::vector<std::string> argv = {program_path("aws"), "glue", "--region", "us-east-1"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--output", "json"});
  auto r = run_process(argv, std::filesystem::temp_directory_path(), moto.env(), 120);
  if (!must && r.exit_code != 0) return nullptr;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// An AthenaIceberg table as the sink suite reads it: the Glue table's current metadata file (Glue keeps no version
// hint) and every file of the table's folder, downloaded from moto.
struct GlueIcebergTable {
  TempDir mirror;
  nlohmann::json glue_table;  // null when there is no such table
  nlohmann::json metadata;
  std::string uri;  // s3://bucket/lake/<table>@<metadata file>, as icebird_digest takes it
};

std::unique_ptr<GlueIcebergTable> glue_iceberg_table(const std::string& bucket, const std::string& table) {
  auto out = std::make_unique<GlueIcebergTable>();
  const auto got = glue(SharedMoto(), {"get-table", "--database-name", "suite", "--name", table}, false);
  if (got.is_null()) return out;
  out->glue_table = got["Table"];
  SharedMoto().download(bucket, "lake/" + table + "/", out->mirror / bucket / "lake" / table);
  const std::string location = out->glue_table["Parameters"].value("metadata_location", "");
  const std::string prefix = fmt::format("s3://{}/", bucket);
  EXPECT_TRUE(location.starts_with(prefix)) << location;
  std::ifstream in(out->mirror / bucket / location.substr(prefix.size()));
  std::stringstream text;
  text << in.rdbuf();
  out->metadata = nlohmann::json::parse(text.str(), nullptr, false);
  out->uri = fmt::format("s3://{}/lake/{}@{}", bucket, table, location.substr(location.rfind('/') + 1));
  return out;
}

// The sink suite (tests/support/sink_suite.h) on AthenaIceberg: a Glue table (or one per stream) per scenario in one
// database over moto, read by icebird from the metadata file Glue names; its ledger the snapshots' BatchIds. After
// each landing: Glue names an Iceberg table whose metadata adds up (each batch once, the added records the total) and
// whose columns Glue lists.
const SinkUnderTest& athena_iceberg_under_test() {
  static const SinkUnderTest sut = [] {
    static const std::string bucket = SharedMoto().create_bucket("ice-suite");
    SinkUnderTest s;
    s.name = "AthenaIceberg";
    s.env = SharedMoto().env();
    s.sink = [](const std::string& where) {
      return fmt::format(R"(AthenaIceberg: {{ bucket: {}, prefix: lake, database: suite, table: "{}", )"
                         "max_snapshots: 100000 }}",
                         bucket, where);
    };
    s.digest = [](const PipelineFixture&, const std::string& where, const std::string& key) {
      const auto table = glue_iceberg_table(bucket, where);
      if (table->glue_table.is_null()) return std::tuple<uint64_t, uint64_t, std::string>(0, 0, "");
      const IcebergDigest d = icebird_digest({table->uri}, key, table->mirror.path());
      EXPECT_TRUE(d.error.empty()) << d.error;
      return std::tuple<uint64_t, uint64_t, std::string>(d.rows, d.distinct_keys, d.hash);
    };
    s.ledger = [](const PipelineFixture&, const std::string& where) {
      const auto ids = iceberg_snapshot_batch_ids(glue_iceberg_table(bucket, where)->metadata);
      const std::set<std::string> distinct(ids.begin(), ids.end());
      return std::pair<uint64_t, uint64_t>(ids.size(), distinct.size());
    };
    s.after_landing = [](const PipelineFixture&, const std::string& where) {
      const auto table = glue_iceberg_table(bucket, where);
      ASSERT_FALSE(table->glue_table.is_null()) << where;
      EXPECT_EQ(table->glue_table["Parameters"].value("table_type", ""), "ICEBERG") << where;
      const auto& metadata = table->metadata;
      ASSERT_TRUE(metadata.is_object()) << where;
      const auto ids = iceberg_snapshot_batch_ids(metadata);
      EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), ids.size()) << where;
      uint64_t added = 0;
      for (const auto& snapshot : metadata["snapshots"]) {
        added += std::stoull(snapshot["summary"].value("added-records", "0"));
      }
      EXPECT_EQ(std::to_string(added), metadata["snapshots"].back()["summary"].value("total-records", "")) << where;
      std::vector<std::string> glue_columns, fields;
      for (const auto& c : table->glue_table["StorageDescriptor"]["Columns"])
        glue_columns.push_back(c.value("Name", ""));
      for (const auto& schema : metadata["schemas"]) {
        if (schema.value("schema-id", -1) != metadata.value("current-schema-id", 0)) continue;
        for (const auto& field : schema["fields"]) fields.push_back(field.value("name", ""));
      }
      EXPECT_EQ(glue_columns, fields) << where;
    };
    s.lands_streams = true;
    s.lands_tables_one_by_one = true;
    // moto answers slower than a folder: a smaller loop, with as many kills.
    s.kill_loop_rows = 40000;
    s.chaos_min_seconds = 0.3;
    s.chaos_max_seconds = 1.2;
    return s;
  }();
  return sut;
}

std::string parquet_digest(const std::filesystem::path& dir) {
  return duckdb_memory_value(fmt::format(
      "SELECT count(*) || ' ' || count(DISTINCT trip_id) || ' ' || sum(hash(trip_id, rider_id, bike_id, event_type, "
      "event_time, station, duration_s, firmware, metadata::VARCHAR)::HUGEINT) FROM read_parquet('{}/**/*.parquet')",
      dir.string()));
}

TEST(Athena, AfterKillsGluePartitionsMatchTheFoldersAndTheObjectsHoldEveryRowOnce) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("athena");
  constexpr uint64_t kRows = 100000;
  std::map<std::string, std::string> env = moto.env();
  // Batches small enough that the kill loop can reach its 15 kills (at 256 KiB, 100,000 rows made so few batches that
  // a fast machine committed them all in 12 killed runs).
  env["BUFFER_THRESHOLD_BYTES"] = "128KiB";
  env["WAL_BYTES_PER_FILE"] = "500000";
  auto sink = [&](const std::string& table) {
    return fmt::format(
        "Athena: {{ bucket: {}, prefix: hive/{}, database: analytics, table: {}, "
        "partition_by: [station] }}",
        bucket, table, table);
  };
  PipelineFixture unkilled(sample_to_sink_config(sink("rides_unkilled"), kRows, 6));
  auto clean = unkilled.skipprd({"sync", "--pipeline", "bikehire", "--once"}, env, 300);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  PipelineFixture f(sample_to_sink_config(sink("rides"), kRows, 6));
  // Each batch is a Parquet object per station (16) and a Glue call: slower than the other sinks, longer runs.
  env["SKIPPR_CHAOS_MIN_SECONDS"] = "0.4";
  env["SKIPPR_CHAOS_MAX_SECONDS"] = "1.5";
  const ChaosRuns runs =
      sync_until_done_under_chaos(f, "bikehire", env, 2300, {.each_failpoint_in_turn = true, .min_kills = 15});
  ASSERT_TRUE(runs.finished) << runs.failure;
  EXPECT_GE(runs.kills, 15) << runs.summary();

  TempDir killed, clean_dir;
  moto.download(bucket, "hive/rides/", killed.path());
  moto.download(bucket, "hive/rides_unkilled/", clean_dir.path());
  const std::string digest = parquet_digest(clean_dir.path());
  EXPECT_EQ(digest.substr(0, digest.find(' ', digest.find(' ') + 1)), fmt::format("{} {}", kRows, kRows));
  EXPECT_EQ(parquet_digest(killed.path()), digest);

  // The folders the objects are in (from the download: listed keys would split at the spaces of station names).
  std::set<std::string> folders;
  size_t objects = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(killed.path())) {
    if (!entry.is_regular_file()) continue;
    ++objects;
    const auto folder = std::filesystem::relative(entry.path().parent_path(), killed.path()).string();
    folders.insert(fmt::format("s3://{}/hive/rides/{}/", bucket, folder));
  }
  std::set<std::string> registered;
  const auto partitions = glue(moto, {"get-partitions", "--database-name", "analytics", "--table-name", "rides"});
  for (const auto& p : partitions["Partitions"]) registered.insert(p["StorageDescriptor"].value("Location", ""));
  EXPECT_EQ(registered, folders);
  EXPECT_GE(folders.size(), 2u);

  const auto table = glue(moto, {"get-table", "--database-name", "analytics", "--name", "rides"})["Table"];
  EXPECT_EQ(table["PartitionKeys"][0].value("Name", ""), "station");
  std::vector<std::string> columns;
  for (const auto& c : table["StorageDescriptor"]["Columns"]) columns.push_back(c.value("Name", ""));
  EXPECT_EQ(columns, (std::vector<std::string>{"trip_id", "rider_id", "bike_id", "event_type", "event_time",
                                               "duration_s", "firmware", "metadata"}));
  std::printf("[ metrics  ] rows=%llu objects=%zu partitions=%zu %s\n", static_cast<unsigned long long>(kRows), objects,
              registered.size(), runs.summary().c_str());
}

// Five stream folders into one Glue database: a table per stream (its name folded to a Glue name), each over its
// stream's folder of the prefix and partitioned there, with exactly that stream's rows in its objects.
TEST(Athena, EachStreamGetsAGlueTableOverItsOwnFolder) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("athena-streams");
  PipelineFixture f(jsonl_files_to_sink_config(
      "in/{stream}/*.jsonl",
      fmt::format(R"(Athena: {{ bucket: {}, prefix: lake/, database: streams, table: "raw_{{stream}}", )"
                  R"(partition_by: [stream_no] }})",
                  bucket)));
  const auto written = write_stream_files(f.root(), 2, 300);
  auto run = f.skipprd({"sync", "--pipeline", "bikehire", "--once"}, moto.env());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (const auto& stream : stream_names()) {
    std::string table = stream_table("raw_", stream);
    for (char& c : table) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto got = glue(moto, {"get-table", "--database-name", "streams", "--name", table});
    ASSERT_TRUE(got.contains("Table")) << stream << ": no Glue table " << table;
    // The stream's folder: its name as it is, every byte other than a letter, a digit, '.', '_' or '-' escaped.
    const std::string folder = fmt::format("s3://{}/lake/{}/", bucket, stream);
    EXPECT_EQ(got["Table"]["StorageDescriptor"].value("Location", ""), folder) << stream;
    const auto partitions = glue(moto, {"get-partitions", "--database-name", "streams", "--table-name", table});
    ASSERT_EQ(partitions["Partitions"].size(), 1u) << stream;
    EXPECT_TRUE(partitions["Partitions"][0]["StorageDescriptor"].value("Location", "").starts_with(folder)) << stream;
    TempDir objects;
    moto.download(bucket, "lake/" + stream + "/", objects.path());
    EXPECT_EQ(duckdb_memory_value(fmt::format("SELECT count(*) || ' ' || count(DISTINCT id) FROM read_parquet('{}/**/"
                                              "*.parquet')",
                                              objects.path().string())),
              fmt::format("{} {}", written.at(stream), written.at(stream)))
        << stream;
  }
}

// A field that appears later becomes a new Glue column; a field whose type changes stops the run naming it.
TEST(Athena, NewFieldsBecomeGlueColumnsAndAChangedTypeIsAClearError) {
  auto& moto = SharedMoto();
  const std::string bucket = moto.create_bucket("athena-evolve");
  // JSON lines files in in/ -> the Glue table evolve.events, as pipeline `pipeline`.
  auto files_to_athena = [&bucket](const std::string& pipeline) {
    return fmt::format(R"(data_sources:
  files:
    File: {{ path: "in/*.jsonl", format: jsonl }}
data_sinks:
  lake:
    Athena: {{ bucket: {}, database: evolve, table: events }}
pipelines:
  {}:
    data_source: data_sources.files
    data_sink: data_sinks.lake
)",
                       bucket, pipeline);
  };
  PipelineFixture f(files_to_athena("p"));
  auto columns = [&] {
    const auto table = glue(moto, {"get-table", "--database-name", "evolve", "--name", "events"})["Table"];
    std::vector<std::string> out;
    for (const auto& c : table["StorageDescriptor"]["Columns"]) {
      out.push_back(c.value("Name", "") + " " + c.value("Type", ""));
    }
    return out;
  };
  write_text(f.path("in/1.jsonl"), "{\"id\": 1, \"name\": \"a\"}\n");
  auto first = f.skipprd({"sync", "--pipeline", "p", "--once"}, moto.env());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(columns(), (std::vector<std::string>{"id bigint", "name string"}));

  write_text(f.path("in/2.jsonl"), "{\"id\": 2, \"name\": \"b\", \"score\": 2.5}\n");
  auto second = f.skipprd({"sync", "--pipeline", "p", "--once"}, moto.env());
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(columns(), (std::vector<std::string>{"id bigint", "name string", "score double"}));

  // The File source keeps the types it learned: a line of another type is a dead letter there, never a batch. A
  // second pipeline whose `id` is text meets the sink's check instead.
  PipelineFixture other(files_to_athena("q"));
  write_text(other.path("in/1.jsonl"), "{\"id\": \"three\", \"name\": \"c\"}\n");
  auto third = other.skipprd({"sync", "--pipeline", "q", "--once"}, moto.env());
  EXPECT_NE(third.exit_code, 0) << third.err;
  EXPECT_NE(third.err.find("field 'id' is bigint in Glue table evolve.events and string in this batch"),
            std::string::npos)
      << third.err;
  EXPECT_EQ(columns(), (std::vector<std::string>{"id bigint", "name string", "score double"}));
}

}  // namespace

INSTANTIATE_SINK_SUITE(AthenaIceberg, athena_iceberg_under_test());

}  // namespace skippr::test
