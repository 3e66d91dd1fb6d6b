// The Iceberg pieces on their own: Avro manifests with the spec's field ids in their header, partition transforms
// (also before 1970), schema evolution as the spec allows it, the ledger in the snapshot summary, schema evolution
// seen by icebird, and metadata that stays bounded over 2,000 commits.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <chrono>

#include "core/time_util.h"
#include "formats/iceberg/manifests.h"
#include "formats/iceberg/partition_spec.h"
#include "formats/iceberg/summary_ledger.h"
#include "formats/iceberg/table_writer.h"
#include "support/iceberg_reader.h"
#include "support/process.h"

namespace skippr {
namespace {

using test::TempDir;

Batch trips(int64_t first_id, size_t rows, int64_t at_micros) {
  Batch b;
  b.schema.fields = {{"trip_id", Type::kInt64}, {"station", Type::kString}, {"event_time", Type::kTimestamp}};
  b.columns = {Column(Type::kInt64), Column(Type::kString), Column(Type::kTimestamp)};
  for (size_t r = 0; r < rows; ++r) {
    b.columns[0].append_int(first_id + static_cast<int64_t>(r));
    b.columns[1].append_string(r % 2 ? "Central" : "Harbour");
    b.columns[2].append_int(at_micros + static_cast<int64_t>(r) * 1'000'000);
  }
  b.rows = rows;
  return b;
}

TEST(IcebergFormat, ManifestListsCarryTheSpecsFieldIdsAndReadBack) {
  ManifestFile m;
  m.path = "s3://b/t/metadata/x-m0.avro";
  m.length = 1234;
  m.sequence_number = 7;
  m.min_sequence_number = 3;
  m.added_snapshot_id = 99;
  m.added_files_count = 2;
  m.existing_files_count = 5;
  m.added_rows_count = 20;
  m.existing_rows_count = 50;
  auto bytes = write_manifest_list({m}, 99, 98, 7);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_EQ(bytes->substr(0, 4), std::string("Obj\x01", 4));
  // The header keeps the schema as written: readers resolve fields by these ids.
  EXPECT_NE(bytes->find(R"("name":"manifest_path","type":"string","field-id":500)"), std::string::npos);
  EXPECT_NE(bytes->find("parent-snapshot-id"), std::string::npos);
  auto back = read_manifest_list(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->front().path, m.path);
  EXPECT_EQ(back->front().length, 1234);
  EXPECT_EQ(back->front().min_sequence_number, 3);
  EXPECT_EQ(back->front().existing_files_count, 5);
  EXPECT_EQ(back->front().existing_rows_count, 50);
}

TEST(IcebergFormat, ManifestsRoundTripPartitionValuesOfEveryType) {
  IcebergSchema schema{0, {{1, "s", "string"}, {2, "n", "long"}, {3, "ts", "timestamptz"}, {4, "ok", "boolean"}}};
  auto spec = make_partition_spec(
      {{"s", Transform::kIdentity}, {"n", Transform::kIdentity}, {"ts", Transform::kDay}, {"ok", Transform::kIdentity}},
      schema, "test");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->fields[2].name, "ts_day");
  EXPECT_EQ(spec->fields[0].field_id, 1000);
  ManifestEntry e;
  e.snapshot_id = 5;
  e.file = {"file:///t/data/a.parquet", 10, 2048, {std::string("x/y"), int64_t{-3}, int64_t{19844}, PartitionValue{}}};
  ManifestEntry existing = e;
  existing.status = EntryStatus::kExisting;
  existing.sequence_number = 2;
  existing.file_sequence_number = 2;
  existing.file.partition = {PartitionValue{}, int64_t{4}, int64_t{-1}, int64_t{1}};
  auto bytes = write_manifest({e, existing}, schema, *spec);
  ASSERT_TRUE(bytes) << bytes.error().message;
  EXPECT_NE(bytes->find(R"({"default":null,"field-id":1002,"name":"ts_day","type":["null","int"]})"),
            std::string::npos);
  EXPECT_NE(bytes->find("partition-spec"), std::string::npos);
  auto back = read_manifest(*bytes);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].status, EntryStatus::kAdded);
  EXPECT_FALSE((*back)[0].sequence_number);  // inherited from the manifest list
  EXPECT_EQ((*back)[0].file.partition, e.file.partition);
  EXPECT_EQ((*back)[1].status, EntryStatus::kExisting);
  EXPECT_EQ((*back)[1].sequence_number, 2);
  EXPECT_EQ((*back)[1].file.partition, existing.file.partition);
  EXPECT_EQ((*back)[1].file.file_size_in_bytes, 2048);
}

TEST(IcebergFormat, TimeTransformsFloorBefore1970AndNameTheirFolders) {
  IcebergSchema schema{0, {{1, "ts", "timestamptz"}, {2, "station", "string"}}};
  auto spec = make_partition_spec({{"ts", Transform::kHour},
                                   {"ts", Transform::kDay},
                                   {"ts", Transform::kMonth},
                                   {"ts", Transform::kYear},
                                   {"station", Transform::kIdentity}},
                                  schema, "test");
  ASSERT_TRUE(spec) << spec.error().message;
  Batch b;
  b.schema.fields = {{"ts", Type::kTimestamp}, {"station", Type::kString}};
  b.columns = {Column(Type::kTimestamp), Column(Type::kString)};
  b.columns[0].append_int(*parse_iso8601_micros("2024-05-01T13:20:00Z"));
  b.columns[1].append_string("a/b c");
  b.columns[0].append_int(*parse_iso8601_micros("1969-12-31T23:30:00Z"));
  b.columns[1].append_null();
  b.rows = 2;
  auto groups = partition_rows(b, *spec);
  ASSERT_EQ(groups.size(), 2u);
  const int64_t day = 19844;  // 2024-05-01
  EXPECT_EQ(groups[0].values,
            (std::vector<PartitionValue>{day * 24 + 13, day, int64_t{54 * 12 + 4}, int64_t{54}, std::string("a/b c")}));
  EXPECT_EQ(groups[1].values,
            (std::vector<PartitionValue>{int64_t{-1}, int64_t{-1}, int64_t{-1}, int64_t{-1}, PartitionValue{}}));
  EXPECT_EQ(partition_path(*spec, schema, groups[0].values),
            "ts_hour=2024-05-01-13/ts_day=2024-05-01/ts_month=2024-05/ts_year=2024/station=a%2Fb%20c/");
  EXPECT_EQ(partition_path(*spec, schema, groups[1].values),
            "ts_hour=1969-12-31-23/ts_day=1969-12-31/ts_month=1969-12/ts_year=1969/station=null/");
  EXPECT_FALSE(make_partition_spec({{"station", Transform::kDay}}, schema, "test"));
  EXPECT_FALSE(make_partition_spec({{"missing", Transform::kIdentity}}, schema, "test"));
}

TEST(IcebergFormat, SchemasEvolveAsTheSpecAllows) {
  int last_id = 2;
  IcebergSchema current{0, {{1, "n", "int"}, {2, "x", "float"}}};
  Schema batch{{{"n", Type::kInt64}, {"x", Type::kDouble}, {"new", Type::kString}}};
  auto next = evolve_schema(current, batch, last_id, "test");
  ASSERT_TRUE(next) << next.error().message;
  ASSERT_TRUE(*next);
  EXPECT_EQ((*next)->fields[0].type, "long");    // int -> long
  EXPECT_EQ((*next)->fields[1].type, "double");  // float -> double
  EXPECT_EQ((*next)->fields[2].id, 3);
  EXPECT_EQ(last_id, 3);
  auto same = evolve_schema(**next, Schema{{{"n", Type::kInt64}}}, last_id, "test");
  ASSERT_TRUE(same);
  EXPECT_FALSE(*same);  // nothing to change: no new schema
  auto bad = evolve_schema(**next, Schema{{{"n", Type::kString}}}, last_id, "lake 'x'");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(bad.error().message.find("lake 'x': field 'n' is long in the table and string in this batch"),
            std::string::npos)
      << bad.error().message;
}

// Files written under one schema and committed after another writer changed the table: what it added stays, what the
// files add is added, a type they widen widens; ids that now name something else cannot be committed.
TEST(IcebergFormat, FilesWrittenBeforeAnotherWritersChangeAreCommittedUnderBothWhenTheirIdsAllow) {
  const IcebergSchema files{0, {{1, "n", "long"}, {2, "x", "float"}, {3, "added_by_us", "string"}}};
  // Another writer added field 3 as "theirs": ids 1..3 given out; ours would reuse 3 for another name.
  EXPECT_FALSE(
      schema_for_files(IcebergSchema{1, {{1, "n", "int"}, {2, "x", "float"}, {3, "theirs", "string"}}}, 3, files));
  // The table as the files were planned from (last id 2), plus nothing: the files' field is added, int widens.
  auto merged = schema_for_files(IcebergSchema{0, {{1, "n", "int"}, {2, "x", "float"}}}, 2, files);
  ASSERT_TRUE(merged);
  ASSERT_EQ(merged->fields.size(), 3u);
  EXPECT_EQ(merged->fields[0].type, "long");
  EXPECT_EQ(merged->fields[2].name, "added_by_us");
  // Another writer added field 4 after ours was planned (its id above ours): both stay.
  const IcebergSchema later{0, {{1, "n", "long"}, {2, "x", "double"}, {3, "added_by_us", "string"}, {4, "z", "int"}}};
  auto both = schema_for_files(later, 4, files);
  ASSERT_TRUE(both);
  EXPECT_EQ(both->to_json()["fields"], later.to_json()["fields"]);  // float files read as the table's double
  // A field renamed under the files' id, or a new field whose id the table gave out and dropped again.
  EXPECT_FALSE(schema_for_files(IcebergSchema{0, {{1, "renamed", "long"}, {2, "x", "float"}}}, 2, files));
  EXPECT_FALSE(schema_for_files(IcebergSchema{0, {{1, "n", "long"}, {2, "x", "float"}}}, 3, files));
}

// A landing written down before its commit (a record of several tables) reads back as written.
TEST(IcebergFormat, APreparedLandingReadsBackAsWritten) {
  PreparedLanding landing;
  landing.schema = IcebergSchema{2, {{1, "n", "long"}, {4, "day", "date"}}};
  landing.last_column_id = 4;
  landing.spec = {{"spec-id", 0}, {"fields", nlohmann::json::array()}};
  landing.batches.push_back({{"p", 3, 7, "abcd"}, Position{"pos-7"}, {}});
  landing.batches.push_back(
      {{"p", 3, 8, "abcd"},
       Position{"pos-8"},
       {{"s3://b/t/data/a.parquet", 10, 2048, {int64_t{19844}, 2.5, std::string("x"), PartitionValue{}}}}});
  auto back = prepared_landing_from_json(nlohmann::json::parse(to_json(landing).dump()), "test");
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->batches.size(), 2u);
  EXPECT_EQ(back->batches[1].id, landing.batches[1].id);
  EXPECT_EQ(back->batches[1].position_after, landing.batches[1].position_after);
  ASSERT_EQ(back->batches[1].files.size(), 1u);
  EXPECT_EQ(back->batches[1].files[0].path, "s3://b/t/data/a.parquet");
  EXPECT_EQ(back->batches[1].files[0].partition, landing.batches[1].files[0].partition);
  EXPECT_EQ(back->schema.to_json(), landing.schema.to_json());
  EXPECT_EQ(back->last_column_id, 4);
  EXPECT_FALSE(prepared_landing_from_json(nlohmann::json::object(), "test"));
}

TEST(IcebergFormat, TheSummaryLedgerAnswersPerLineageAndKeepsTheNewestTip) {
  SummaryLedger ledger;
  ledger.add({"p", 1, 5, "aaaa"}, Position{"five"});
  ledger.add({"p", 1, 6, "aaaa"}, Position{"six"});
  ledger.add({"p", 3, 1, "bbbb"}, Position{"new lineage"});
  auto parsed = SummaryLedger::parse(ledger.dump());
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->has({"p", 1, 4, "aaaa"}));
  EXPECT_TRUE(parsed->has({"p", 1, 6, "aaaa"}));
  EXPECT_FALSE(parsed->has({"p", 1, 7, "aaaa"}));
  EXPECT_FALSE(parsed->has({"p", 1, 1, "cccc"}));  // a lineage never seen: a fresh DATA_DIR's first batch
  EXPECT_FALSE(parsed->has({"q", 1, 1, "aaaa"}));  // another pipeline
  auto tip = parsed->tip("p");
  ASSERT_TRUE(tip);
  EXPECT_EQ(tip->position_after.token, "new lineage");
  EXPECT_EQ(tip->max_epoch, 3u);
  EXPECT_FALSE(SummaryLedger::parse("[1,2]"));
  // Another tool expired the snapshot that held it: the table's properties still answer.
  const nlohmann::json expired = {{"current-snapshot-id", 9},
                                  {"snapshots", {{{"snapshot-id", 9}, {"summary", {{"operation", "replace"}}}}}},
                                  {"properties", {{"skippr.ledger", ledger.dump()}}}};
  auto from_properties = SummaryLedger::of_table(expired);
  ASSERT_TRUE(from_properties);
  EXPECT_TRUE(from_properties->has({"p", 1, 6, "aaaa"}));
  EXPECT_FALSE(from_properties->has({"p", 1, 7, "aaaa"}));
}

struct FolderTable {
  TempDir dir;
  std::filesystem::path table = dir / "trips";
  std::unique_ptr<IcebergTableWriter> writer(IcebergWriterOptions options = {}) {
    options.what = "test lake";
    options.scratch_dir = dir / "scratch";
    auto store = folder_table_store(table);
    EXPECT_TRUE(store);
    auto catalog = storage_catalog(**store);
    return std::make_unique<IcebergTableWriter>(options, std::move(*store), std::move(catalog));
  }
};

TEST(IcebergTable, ANewFieldIsANewIdReadersSeeAndAnIllegalChangeIsAClearError) {
  FolderTable t;
  auto writer = t.writer();
  ASSERT_TRUE(writer->open());
  const BatchId first{"p", 1, 1, "0123"}, second{"p", 1, 2, "0123"}, third{"p", 1, 3, "0123"};
  Batch one = trips(1, 3, 0);
  Batch two = trips(4, 2, 0);
  two.schema.fields.push_back({"rating", Type::kDouble});
  two.columns.emplace_back(Type::kDouble);
  two.columns.back().append_double(4.5);
  two.columns.back().append_null();
  ASSERT_TRUE(writer->land(std::vector<BatchToLand>{{one, first, Position{}}}));
  ASSERT_TRUE(writer->land(std::vector<BatchToLand>{{two, second, Position{}}}));
  const auto metadata = test::iceberg_current_metadata(t.table);
  EXPECT_EQ(metadata["schemas"].size(), 2u);
  EXPECT_EQ(metadata["last-column-id"], 4);
  EXPECT_EQ(metadata["schemas"][1]["fields"][3]["name"], "rating");
  const auto read = test::icebird_digest({"file://" + t.table.string()}, "trip_id");
  ASSERT_TRUE(read.error.empty()) << read.error;
  EXPECT_EQ(read.rows, 5u);
  EXPECT_EQ(read.columns, (std::vector<std::string>{"trip_id", "station", "event_time", "rating"}));

  Batch three = trips(6, 1, 0);
  three.schema.fields[1].type = Type::kInt64;  // station was a string
  three.columns[1] = Column(Type::kInt64);
  three.columns[1].append_int(7);
  auto refused = writer->land(std::vector<BatchToLand>{{three, third, Position{}}});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind, ErrorKind::kBadInput);
  EXPECT_NE(refused.error().message.find("Iceberg can only widen int to long and float to double"), std::string::npos);
  // A replay of a landed batch is found in the ledger and written again nowhere.
  auto replay = writer->land(std::vector<BatchToLand>{{one, first, Position{}}});
  ASSERT_TRUE(replay);
  EXPECT_EQ(replay->front().outcome, WriteOutcome::kAlreadyApplied);
  EXPECT_EQ(test::iceberg_current_metadata(t.table)["snapshots"].size(), 2u);
}

// A commit per batch must not make later commits slower without end: past manifest_merge_count the older manifests
// are merged, past max_snapshots the oldest snapshots leave the metadata.
TEST(IcebergTable, TwoThousandCommitsKeepTheMetadataAndTheCommitTimeBounded) {
  FolderTable t;
  IcebergWriterOptions options;
  options.partition_by = {{"event_time", Transform::kDay}};
  auto writer = t.writer(options);
  ASSERT_TRUE(writer->open());
  constexpr int kCommits = 2000;
  constexpr size_t kRowsEach = 10;
  std::vector<double> seconds;
  int merges = 0, expired = 0;
  const int64_t start = *parse_iso8601_micros("2024-05-01T00:00:00Z");
  for (int i = 0; i < kCommits; ++i) {
    // Two days per commit on some: two data files.
    Batch b = trips(1 + i * static_cast<int64_t>(kRowsEach), kRowsEach, start + (i % 7) * 43'200'000'000LL);
    const BatchId id{"p", 1, static_cast<uint64_t>(i + 1), "0123"};
    const auto began = std::chrono::steady_clock::now();
    auto landed = writer->land(std::vector<BatchToLand>{{b, id, Position{std::to_string(i)}}});
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count());
    ASSERT_TRUE(landed) << landed.error().message;
    merges += writer->last_commit().manifests_merged > 0;
    expired += writer->last_commit().snapshots_expired;
  }
  auto sum = [&](size_t from, size_t to) {
    double s = 0;
    for (size_t i = from; i < to; ++i) s += seconds[i];
    return s;
  };
  const double first = sum(0, 100), last = sum(kCommits - 100, kCommits);
  std::printf("[ metrics  ] first 100 commits %.2f s, last 100 %.2f s (ratio %.2f); %d merges, %d snapshots expired\n",
              first, last, last / first, merges, expired);
  EXPECT_LE(last, 2 * first);
  EXPECT_GE(merges, 15);
  EXPECT_EQ(expired, kCommits - 100);
  const auto metadata = test::iceberg_current_metadata(t.table);
  EXPECT_EQ(metadata["snapshots"].size(), 100u);
  EXPECT_EQ(metadata["snapshot-log"].size(), 100u);
  EXPECT_EQ(metadata["metadata-log"].size(), 100u);
  EXPECT_EQ(metadata["snapshots"].back()["summary"]["total-records"], std::to_string(kCommits * kRowsEach));
  const auto read = test::icebird_digest({"file://" + t.table.string()}, "trip_id");
  ASSERT_TRUE(read.error.empty()) << read.error;
  EXPECT_EQ(read.rows, kCommits * kRowsEach);
  EXPECT_EQ(read.distinct_keys, kCommits * kRowsEach);
}

}  // namespace
}  // namespace skippr
