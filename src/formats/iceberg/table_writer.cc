#include "formats/iceberg/table_writer.h"

#include <fmt/format.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "core/failpoint.h"
#include "formats/iceberg/orphan_files.h"
#include "formats/iceberg/partition_fields.h"
#include "formats/iceberg/summary_ledger.h"
#include "formats/object_encoding.h"

namespace skippr {
namespace {

// Commits lost in a row to other writers before giving up (each loss means another writer made progress).
constexpr int kMaxConflicts = 50;
// Landings written again in a row because other writers changed the table's columns or layout under them.
constexpr int kMaxRewrites = 5;

std::string uuid4() {
  unsigned char b[16];
  RAND_bytes(b, sizeof b);
  b[6] = (b[6] & 0x0F) | 0x40;
  b[8] = (b[8] & 0x3F) | 0x80;
  return fmt::format(
      "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", b[0],
      b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int64_t new_snapshot_id() {
  int64_t id = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&id), sizeof id);
  id &= INT64_MAX;
  return id == 0 ? 1 : id;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t summary_number(const nlohmann::json& snapshot, const char* key) {
  const auto summary = snapshot.value("summary", nlohmann::json::object());
  try {
    return std::stoll(summary.value(key, std::string("0")));
  } catch (const std::exception&) {
    return 0;
  }
}

const nlohmann::json* current_snapshot(const nlohmann::json& metadata) {
  if (!metadata.contains("current-snapshot-id") || !metadata["current-snapshot-id"].is_number()) return nullptr;
  const int64_t id = metadata["current-snapshot-id"].get<int64_t>();
  if (!metadata.contains("snapshots")) return nullptr;
  for (const auto& s : metadata.at("snapshots")) {
    if (s.value("snapshot-id", int64_t{-1}) == id) return &s;
  }
  return nullptr;
}

std::string describe(const std::vector<PartitionRequest>& requests) {
  std::string out;
  for (const auto& r : requests) {
    if (!out.empty()) out += ", ";
    static const char* names[] = {"identity", "year", "month", "day", "hour"};
    out += r.transform == Transform::kIdentity
               ? r.source_name
               : fmt::format("{}({})", names[static_cast<int>(r.transform)], r.source_name);
  }
  return out.empty() ? "nothing" : "[" + out + "]";
}

// The table's current schema (nullopt for a table not created yet).
Result<std::optional<IcebergSchema>> current_schema(const std::optional<TableVersion>& base) {
  if (!base) return std::optional<IcebergSchema>();
  const auto& md = base->metadata;
  for (const auto& s : md.at("schemas")) {
    if (s.value("schema-id", -1) != md.value("current-schema-id", 0)) continue;
    auto parsed = IcebergSchema::from_json(s);
    if (!parsed) return std::unexpected(parsed.error());
    return std::optional<IcebergSchema>(std::move(*parsed));
  }
  return std::optional<IcebergSchema>();
}

// The table's default partition spec, its fields resolved in `schema` (nullopt when the metadata names none).
Result<std::optional<PartitionSpec>> default_spec(const nlohmann::json& metadata, const IcebergSchema& schema) {
  for (const auto& s : metadata.at("partition-specs")) {
    if (s.value("spec-id", -1) != metadata.value("default-spec-id", 0)) continue;
    auto spec = PartitionSpec::from_json(s, schema);
    if (!spec) return std::unexpected(spec.error());
    return std::optional<PartitionSpec>(std::move(*spec));
  }
  return std::optional<PartitionSpec>();
}

std::vector<PartitionRequest> requests_of(const PartitionSpec& spec) {
  std::vector<PartitionRequest> out;
  for (const auto& f : spec.fields) out.push_back({f.source_name, f.transform});
  return out;
}

}  // namespace

struct IcebergTableWriter::Plan {
  IcebergSchema schema;
  bool schema_added = false;
  int last_column_id = 0;
  PartitionSpec spec;
  SummaryLedger ledger;  // the base's, with the new batches added
};

IcebergTableWriter::IcebergTableWriter(IcebergWriterOptions options, std::unique_ptr<TableStore> store,
                                       std::unique_ptr<IcebergCatalog> catalog)
    : options_(std::move(options)), store_(std::move(store)), catalog_(std::move(catalog)) {}

IcebergTableWriter::~IcebergTableWriter() = default;

Status IcebergTableWriter::open() {
  auto base = catalog_->load();
  if (!base) return std::unexpected(base.error());
  if (!*base) return ok();
  const auto& md = (*base)->metadata;
  if (md.value("format-version", 0) != 2) {
    return fail(ErrorKind::kConfig, fmt::format("{}: the table at {} is Iceberg format version {}; this writer "
                                                "writes version 2 tables (upgrade the table, or name a new one)",
                                                options_.what, catalog_->where(), md.value("format-version", 0)));
  }
  auto schema = IcebergSchema::from_json(md.at("schemas").back());
  for (const auto& s : md.at("schemas")) {
    if (s.value("schema-id", -1) == md.value("current-schema-id", 0)) schema = IcebergSchema::from_json(s);
  }
  if (!schema) return fail(ErrorKind::kConfig, fmt::format("{}: {}", options_.what, schema.error().message));
  auto spec = default_spec(md, *schema);
  if (!spec) return fail(ErrorKind::kConfig, fmt::format("{}: {}", options_.what, spec.error().message));
  if (*spec) {
    PartitionSpec wanted;
    for (const auto& r : options_.partition_by) wanted.fields.push_back({r.source_name, 0, 0, "", r.transform});
    if (!(*spec)->same_layout(wanted)) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: the table at {} is partitioned by {}, and partition_by says {}; make them agree "
                              "(this writer does not change a table's partition spec)",
                              options_.what, catalog_->where(), describe(requests_of(**spec)),
                              describe(options_.partition_by)));
    }
  }
  return ok();
}

Result<std::optional<LedgerTip>> IcebergTableWriter::ledger_tip(std::string_view pipeline) {
  auto base = catalog_->load();
  if (!base) return std::unexpected(base.error());
  if (!*base) return std::optional<LedgerTip>();
  auto ledger = SummaryLedger::of_table((*base)->metadata);
  if (!ledger) return std::unexpected(ledger.error());
  return ledger->tip(pipeline);
}

Result<IcebergTableWriter::Plan> IcebergTableWriter::plan(const std::optional<TableVersion>& base, SummaryLedger held,
                                                          std::span<const BatchToLand> batches) {
  Plan p;
  p.ledger = std::move(held);
  int max_schema_id = -1;
  if (base) {
    const auto& md = base->metadata;
    p.last_column_id = md.value("last-column-id", 0);
    for (const auto& s : md.at("schemas")) max_schema_id = std::max(max_schema_id, s.value("schema-id", 0));
  }
  auto current = current_schema(base);
  if (!current) return std::unexpected(current.error());
  std::optional<IcebergSchema> schema = *current;
  for (const auto& item : batches) {
    auto next = evolve_schema(schema, item.batch.schema, p.last_column_id, options_.what);
    if (!next) return std::unexpected(next.error());
    if (*next) {
      schema = std::move(**next);
      schema->schema_id = max_schema_id + 1;
      p.schema_added = true;
    }
  }
  p.schema = *schema;
  auto spec = base ? default_spec(base->metadata, p.schema) : Result<std::optional<PartitionSpec>>(std::nullopt);
  if (!spec) return std::unexpected(spec.error());
  if (*spec) {
    p.spec = std::move(**spec);
  } else if (!base) {
    auto made = make_partition_spec(options_.partition_by, p.schema, options_.what);
    if (!made) return std::unexpected(made.error());
    p.spec = std::move(*made);
  }
  for (const auto& item : batches) p.ledger.add(item.id, item.position_after);
  return p;
}

Result<std::vector<std::vector<DataFile>>> IcebergTableWriter::write_data_files(const Plan& plan,
                                                                                std::span<const BatchToLand> batches) {
  if (!parquet_) {
    auto writer = ParquetFileWriter::open();
    if (!writer) return std::unexpected(writer.error());
    parquet_ = std::make_shared<ParquetFileWriter>(std::move(*writer));
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.scratch_dir, ec);
  const auto scratch = options_.scratch_dir / "iceberg-data.parquet";
  const ObjectEncoding parquet{OutputFormat::kParquet};
  ParquetFileWriter::Options options;
  options.compression = options_.parquet_compression;
  options.json_as_text = true;
  // Readers map a file's columns to the table's by these ids (a file written before a field was added lacks it).
  options.key_value_metadata.emplace_back("iceberg.schema", plan.schema.to_json().dump());
  std::vector<std::vector<DataFile>> files;
  bool wrote_one = false;
  for (const auto& item : batches) {
    if (wrote_one) failpoint::hit(failpoint::kSinkInGroup);
    auto& batch_files = files.emplace_back();
    options.field_ids.clear();
    for (const auto& field : item.batch.schema.fields) options.field_ids.push_back(plan.schema.find(field.name)->id);
    for (auto& group : partition_rows(item.batch, plan.spec)) {
      if (group.rows.empty()) continue;  // a batch of no rows (its records dead-lettered) adds no data file
      const bool whole = group.rows.size() == item.batch.rows;
      SKIPPR_TRY(parquet_->write(whole ? item.batch : rows_of(item.batch, group.rows), scratch, options));
      std::error_code size_error;
      const auto size = static_cast<int64_t>(std::filesystem::file_size(scratch, size_error));
      if (size_error) {
        return fail(ErrorKind::kUnavailable, fmt::format("{}: {}", scratch.string(), size_error.message()));
      }
      // Named from the BatchId, plus a random part: another writer of the same batch (a lease being handed over)
      // never overwrites a committed file, and two partition groups never share a name. A retry writes new files;
      // those a crash leaves uncommitted are never in a snapshot, and the name lets the sweep tell them
      // (orphan_files.h).
      std::string name = batch_object_name(item.id, parquet);
      name.insert(name.size() - parquet.extension().size(), "-" + uuid4().substr(0, 8));
      const std::string rel = "data/" + partition_path(plan.spec, plan.schema, group.values) + name;
      SKIPPR_TRY(store_->write_file(rel, scratch));
      data_written_.push_back(rel);
      batch_files.push_back({store_->uri(rel), static_cast<int64_t>(group.rows.size()), size, std::move(group.values)});
    }
    wrote_one = true;
  }
  return files;
}

Result<std::string> IcebergTableWriter::relative(const std::string& location) const {
  const std::string root = store_->uri("");
  if (!location.starts_with(root)) {
    return fail(ErrorKind::kBadInput,
                fmt::format("{}: {} is outside the table's location {}", options_.what, location, root));
  }
  return location.substr(root.size());
}

Result<std::vector<ManifestFile>> IcebergTableWriter::carried_manifests(const nlohmann::json& base, const Plan& plan,
                                                                        int64_t snapshot_id, int64_t sequence_number) {
  const nlohmann::json* current = current_snapshot(base);
  if (!current) return std::vector<ManifestFile>();
  auto list_path = relative(current->value("manifest-list", std::string()));
  if (!list_path) return std::unexpected(list_path.error());
  auto list_bytes = store_->read(*list_path);
  if (!list_bytes) return std::unexpected(list_bytes.error());
  if (!*list_bytes) {
    return fail(ErrorKind::kCorruption,
                fmt::format("{}: the current snapshot's manifest list {} is missing", options_.what, *list_path));
  }
  auto manifests = read_manifest_list(**list_bytes);
  if (!manifests) return std::unexpected(manifests.error());
  if (static_cast<int>(manifests->size()) + 1 <= options_.manifest_merge_count) return manifests;

  // Too many: every data manifest of the current spec becomes one, its entries EXISTING with their sequence
  // numbers explicit (inheritance applies to ADDED entries only).
  std::vector<ManifestFile> kept;
  std::vector<ManifestEntry> merged;
  int folded = 0;
  for (const auto& m : *manifests) {
    if (m.content != 0 || m.partition_spec_id != plan.spec.spec_id) {
      kept.push_back(m);
      continue;
    }
    auto path = relative(m.path);
    if (!path) return std::unexpected(path.error());
    auto bytes = store_->read(*path);
    if (!bytes) return std::unexpected(bytes.error());
    if (!*bytes) return fail(ErrorKind::kCorruption, fmt::format("{}: manifest {} is missing", options_.what, *path));
    auto entries = read_manifest(**bytes);
    if (!entries) return std::unexpected(entries.error());
    for (auto& e : *entries) {
      if (e.status == EntryStatus::kDeleted) continue;
      e.snapshot_id = e.snapshot_id.value_or(m.added_snapshot_id);
      e.sequence_number = e.sequence_number.value_or(m.sequence_number);
      e.file_sequence_number = e.file_sequence_number.value_or(m.sequence_number);
      e.status = EntryStatus::kExisting;
      merged.push_back(std::move(e));
    }
    ++folded;
  }
  if (folded < 2) return manifests;
  auto bytes = write_manifest(merged, plan.schema, plan.spec);
  if (!bytes) return std::unexpected(bytes.error());
  const std::string rel = fmt::format("metadata/{}-m1.avro", uuid4());
  SKIPPR_TRY(store_->write(rel, *bytes));
  metadata_written_.push_back(rel);
  ManifestFile m;
  m.path = store_->uri(rel);
  m.length = static_cast<int64_t>(bytes->size());
  m.partition_spec_id = plan.spec.spec_id;
  m.sequence_number = sequence_number;
  m.min_sequence_number = sequence_number;
  for (const auto& e : merged) m.min_sequence_number = std::min(m.min_sequence_number, *e.sequence_number);
  m.added_snapshot_id = snapshot_id;
  m.existing_files_count = static_cast<int32_t>(merged.size());
  for (const auto& e : merged) m.existing_rows_count += e.file.record_count;
  kept.insert(kept.begin(), std::move(m));
  report_.manifests_merged = folded;
  return kept;
}

Result<nlohmann::json> IcebergTableWriter::next_metadata(const std::optional<TableVersion>& base, const Plan& plan,
                                                         const std::string& batch_ids,
                                                         const std::vector<DataFile>& files) {
  const int64_t now = now_ms();
  nlohmann::json md;
  if (base) {
    md = base->metadata;
  } else {
    std::string location = store_->uri("");
    if (location.ends_with('/')) location.pop_back();
    int last_partition_id = 999;
    for (const auto& f : plan.spec.fields) last_partition_id = std::max(last_partition_id, f.field_id);
    md = {{"format-version", 2},
          {"table-uuid", uuid4()},
          {"location", location},
          {"last-sequence-number", 0},
          {"last-updated-ms", now},
          {"last-column-id", 0},
          {"schemas", nlohmann::json::array()},
          {"current-schema-id", 0},
          {"partition-specs", nlohmann::json::array({plan.spec.to_json()})},
          {"default-spec-id", plan.spec.spec_id},
          {"last-partition-id", last_partition_id},
          {"properties", {{"write.format.default", "parquet"}}},
          {"snapshots", nlohmann::json::array()},
          {"snapshot-log", nlohmann::json::array()},
          {"metadata-log", nlohmann::json::array()},
          {"sort-orders", nlohmann::json::array({{{"order-id", 0}, {"fields", nlohmann::json::array()}}})},
          {"default-sort-order-id", 0},
          {"refs", nlohmann::json::object()}};
  }
  if (plan.schema_added) {
    md["schemas"].push_back(plan.schema.to_json());
    md["current-schema-id"] = plan.schema.schema_id;
    md["last-column-id"] = plan.last_column_id;
  }
  const int64_t sequence_number = md.value("last-sequence-number", int64_t{0}) + 1;
  const int64_t snapshot_id = new_snapshot_id();
  const nlohmann::json* parent = base ? current_snapshot(base->metadata) : nullptr;

  // The new files' manifest, first in the list (readers plan newest first).
  std::vector<ManifestEntry> entries;
  int64_t added_rows = 0;
  for (const auto& f : files) {
    entries.push_back({EntryStatus::kAdded, snapshot_id, std::nullopt, std::nullopt, f});
    added_rows += f.record_count;
  }
  auto manifest = write_manifest(entries, plan.schema, plan.spec);
  if (!manifest) return std::unexpected(manifest.error());
  const std::string manifest_rel = fmt::format("metadata/{}-m0.avro", uuid4());
  SKIPPR_TRY(store_->write(manifest_rel, *manifest));
  metadata_written_.push_back(manifest_rel);
  ManifestFile added;
  added.path = store_->uri(manifest_rel);
  added.length = static_cast<int64_t>(manifest->size());
  added.partition_spec_id = plan.spec.spec_id;
  added.sequence_number = sequence_number;
  added.min_sequence_number = sequence_number;
  added.added_snapshot_id = snapshot_id;
  added.added_files_count = static_cast<int32_t>(files.size());
  added.added_rows_count = added_rows;
  std::vector<ManifestFile> manifests = {added};
  if (base) {
    auto carried = carried_manifests(base->metadata, plan, snapshot_id, sequence_number);
    if (!carried) return std::unexpected(carried.error());
    manifests.insert(manifests.end(), carried->begin(), carried->end());
  }
  std::optional<int64_t> parent_id;
  if (parent) parent_id = parent->value("snapshot-id", int64_t{0});
  auto list = write_manifest_list(manifests, snapshot_id, parent_id, sequence_number);
  if (!list) return std::unexpected(list.error());
  const std::string list_rel = fmt::format("metadata/snap-{}-1-{}.avro", snapshot_id, uuid4());
  SKIPPR_TRY(store_->write(list_rel, *list));
  metadata_written_.push_back(list_rel);

  const int64_t total_records = (parent ? summary_number(*parent, "total-records") : 0) + added_rows;
  const int64_t total_files =
      (parent ? summary_number(*parent, "total-data-files") : 0) + static_cast<int64_t>(files.size());
  nlohmann::json snapshot = {{"snapshot-id", snapshot_id},
                             {"sequence-number", sequence_number},
                             {"timestamp-ms", now},
                             {"manifest-list", store_->uri(list_rel)},
                             {"schema-id", plan.schema.schema_id},
                             {"summary",
                              {{"operation", "append"},
                               {"added-data-files", std::to_string(files.size())},
                               {"added-records", std::to_string(added_rows)},
                               {"total-records", std::to_string(total_records)},
                               {"total-data-files", std::to_string(total_files)},
                               {"total-delete-files", "0"},
                               {std::string(kSummaryBatchIds), batch_ids},
                               {std::string(kSummaryLedger), plan.ledger.dump()}}}};
  if (parent_id) snapshot["parent-snapshot-id"] = *parent_id;
  // Also in the table's properties, which other engines carry forward: the ledger survives another tool expiring
  // the snapshot that holds it (SummaryLedger::of_table falls back to it).
  md["properties"][std::string(kSummaryLedger)] = plan.ledger.dump();
  md["snapshots"].push_back(snapshot);
  md["current-snapshot-id"] = snapshot_id;
  md["refs"]["main"] = {{"snapshot-id", snapshot_id}, {"type", "branch"}};
  md["snapshot-log"].push_back({{"timestamp-ms", now}, {"snapshot-id", snapshot_id}});
  if (base) {
    md["metadata-log"].push_back(
        {{"timestamp-ms", base->metadata.value("last-updated-ms", now)}, {"metadata-file", base->location}});
  }
  md["last-sequence-number"] = sequence_number;
  md["last-updated-ms"] = now;

  // Bounded metadata: the oldest snapshots leave it (the ledger is carried by the newest, which always stays).
  auto& snapshots = md["snapshots"];
  const size_t keep = static_cast<size_t>(std::max(1, options_.max_snapshots));
  if (snapshots.size() > keep) {
    // The newest `keep`, and any a branch or tag (another engine's) still names.
    std::set<int64_t> referenced;
    for (const auto& [name, ref] : md["refs"].items()) referenced.insert(ref.value("snapshot-id", int64_t{-1}));
    nlohmann::json kept = nlohmann::json::array();
    for (size_t i = 0; i < snapshots.size(); ++i) {
      if (i + keep >= snapshots.size() || referenced.contains(snapshots[i].value("snapshot-id", int64_t{-1}))) {
        kept.push_back(snapshots[i]);
      }
    }
    report_.snapshots_expired = static_cast<int>(snapshots.size() - kept.size());
    snapshots = std::move(kept);
    std::set<int64_t> live;
    for (const auto& s : snapshots) live.insert(s.value("snapshot-id", int64_t{-1}));
    nlohmann::json log = nlohmann::json::array();
    for (const auto& e : md["snapshot-log"]) {
      if (live.contains(e.value("snapshot-id", int64_t{-1}))) log.push_back(e);
    }
    md["snapshot-log"] = std::move(log);
  }
  auto& previous = md["metadata-log"];
  const size_t keep_versions = static_cast<size_t>(std::max(1, options_.max_previous_versions));
  if (previous.size() > keep_versions) {
    previous.erase(previous.begin(), previous.begin() + static_cast<std::ptrdiff_t>(previous.size() - keep_versions));
  }
  report_.snapshot_id = snapshot_id;
  report_.data_files = static_cast<int>(files.size());
  return md;
}

Result<std::vector<BatchLanded>> IcebergTableWriter::land(std::span<const BatchToLand> group) {
  report_ = {};
  committing_ = false;
  auto landed = land_group(group);
  // A landing that failed before its commit leaves nothing behind (each retry used to add its files); one whose
  // commit failed may have made it, so its files stay (the sweep takes them once their batches are held).
  if (!landed && !committing_) {
    discard(data_written_);
    discard(metadata_written_);
  }
  after_commit(landed.has_value());
  return landed;
}

Result<IcebergTableWriter::Prepared> IcebergTableWriter::prepare(std::span<const BatchToLand> group) {
  report_ = {};
  auto prepared = prepare_files(group);
  // Written files are the caller's from here (its record names them); those of a failure are no one's.
  if (!prepared) discard(data_written_);
  data_written_.clear();
  return prepared;
}

Result<IcebergTableWriter::Committed> IcebergTableWriter::commit(const PreparedLanding& landing) {
  report_ = {};
  committing_ = false;
  auto committed = commit_files(landing);
  if (!committed && !committing_) discard(metadata_written_);
  after_commit(committed.has_value());
  return committed;
}

void IcebergTableWriter::after_commit(bool succeeded) {
  discard(abandoned_);
  data_written_.clear();
  metadata_written_.clear();
  if (succeeded && !swept_ && report_.snapshot_id != 0) {
    swept_ = true;
    sweep();
  }
}

void IcebergTableWriter::discard_files(const PreparedLanding& landing, const std::vector<bool>& which) {
  std::vector<std::string> files;
  for (size_t i = 0; i < landing.batches.size(); ++i) {
    if (!which.empty() && !which[i]) continue;
    for (const auto& file : landing.batches[i].files) {
      if (auto rel = relative(file.path)) files.push_back(*rel);
    }
  }
  discard(files);
}

void IcebergTableWriter::discard(std::vector<std::string>& files) {
  for (const auto& file : files) {
    if (auto removed = store_->remove(file); !removed) {
      spdlog::debug("{}: {} stays behind: {}", options_.what, file, removed.error().message);
    }
  }
  files.clear();
}

void IcebergTableWriter::sweep() {
  auto base = catalog_->load();
  if (!base || !*base) return;
  auto removed = sweep_orphan_data_files(*store_, (*base)->metadata);
  if (!removed) {
    spdlog::warn("{}: data files no snapshot names were not swept: {}", options_.what, removed.error().message);
  } else if (*removed > 0) {
    spdlog::info(
        "{}: removed {} data file(s) of batches the table holds that no snapshot names (left by a landing "
        "that was killed)",
        options_.what, *removed);
  }
}

Result<std::vector<BatchLanded>> IcebergTableWriter::land_group(std::span<const BatchToLand> group) {
  for (int rewrites = 0; rewrites <= kMaxRewrites; ++rewrites) {
    auto prepared = prepare_files(group);
    if (!prepared) return std::unexpected(prepared.error());
    if (prepared->landing.empty()) return prepared->outcomes;
    auto committed = commit_files(prepared->landing);
    if (!committed) return std::unexpected(committed.error());
    if (committed->stale) {
      // Another writer changed the columns' ids or the layout: the files are written again for the new ones.
      abandoned_.insert(abandoned_.end(), data_written_.begin(), data_written_.end());
      data_written_.clear();
      continue;
    }
    for (size_t i = 0; i < committed->held.size(); ++i) {
      if (committed->held[i]) prepared->outcomes[prepared->group_index[i]].outcome = WriteOutcome::kAlreadyApplied;
    }
    // Another writer landed those (a lease being handed over, a lost answer): the files written here for them are
    // never committed.
    discard_files(prepared->landing, committed->held);
    return prepared->outcomes;
  }
  return fail(ErrorKind::kUnavailable, fmt::format("{}: other writers kept changing the table's columns or layout "
                                                   "while a landing was written ({} times in a row)",
                                                   options_.what, kMaxRewrites + 1));
}

Result<IcebergTableWriter::Current> IcebergTableWriter::load_current() {
  auto base = catalog_->load();
  if (!base) return std::unexpected(base.error());
  Current current{std::move(*base), {}};
  if (current.base) {
    auto ledger = SummaryLedger::of_table(current.base->metadata);
    if (!ledger) return std::unexpected(ledger.error());
    current.held = std::move(*ledger);
  }
  return current;
}

Result<IcebergTableWriter::Prepared> IcebergTableWriter::prepare_files(std::span<const BatchToLand> group) {
  auto loaded = load_current();
  if (!loaded) return std::unexpected(loaded.error());
  auto& [base, held] = *loaded;
  Prepared out;
  out.outcomes.resize(group.size());
  std::vector<BatchToLand> fresh;
  for (size_t i = 0; i < group.size(); ++i) {
    if (held.has(group[i].id)) {
      out.outcomes[i].outcome = WriteOutcome::kAlreadyApplied;
    } else {
      fresh.push_back(group[i]);
      out.group_index.push_back(i);
    }
  }
  if (fresh.empty()) return out;
  // Each batch's partition fields as the spec needs them (partition_fields.h), from the table's current schema.
  auto current = current_schema(base);
  if (!current) return std::unexpected(current.error());
  std::vector<std::optional<Batch>> fitted;
  fitted.reserve(fresh.size());
  for (const auto& item : fresh) fitted.push_back(fit_partition_fields(item.batch, options_.partition_by, *current));
  std::vector<BatchToLand> fit;
  for (size_t i = 0; i < fresh.size(); ++i) {
    fit.push_back({fitted[i] ? *fitted[i] : fresh[i].batch, fresh[i].id, fresh[i].position_after});
  }
  auto p = plan(base, std::move(held), fit);
  if (!p) return std::unexpected(p.error());
  auto files = write_data_files(*p, fit);
  if (!files) return std::unexpected(files.error());
  for (size_t i = 0; i < fit.size(); ++i) {
    out.landing.batches.push_back({fit[i].id, fit[i].position_after, std::move((*files)[i])});
  }
  out.landing.schema = p->schema;
  out.landing.last_column_id = p->last_column_id;
  out.landing.spec = p->spec.to_json();
  return out;
}

Result<std::optional<IcebergTableWriter::Plan>> IcebergTableWriter::plan_commit(
    const std::optional<TableVersion>& base, SummaryLedger held, const PreparedLanding& landing,
    const std::vector<const PreparedBatch*>& batches) {
  Plan p;
  p.ledger = std::move(held);
  for (const auto* batch : batches) p.ledger.add(batch->id, batch->position_after);
  int max_schema_id = -1;
  int base_last_column_id = 0;
  if (base) {
    base_last_column_id = base->metadata.value("last-column-id", 0);
    for (const auto& s : base->metadata.at("schemas")) max_schema_id = std::max(max_schema_id, s.value("schema-id", 0));
  }
  auto current = current_schema(base);
  if (!current) return std::unexpected(current.error());
  std::optional<IcebergSchema> schema = landing.schema;
  if (*current) schema = schema_for_files(**current, base_last_column_id, landing.schema);
  if (!schema) return std::optional<Plan>();
  if (*current && (*current)->to_json()["fields"] == schema->to_json()["fields"]) {
    p.schema = **current;
    p.last_column_id = base_last_column_id;
  } else {
    p.schema = std::move(*schema);
    p.schema.schema_id = max_schema_id + 1;
    p.schema_added = true;
    p.last_column_id = std::max(base_last_column_id, landing.last_column_id);
  }
  auto written_under = PartitionSpec::from_json(landing.spec, p.schema);
  if (!written_under) return std::unexpected(written_under.error());
  p.spec = std::move(*written_under);
  auto spec = base ? default_spec(base->metadata, p.schema) : Result<std::optional<PartitionSpec>>(std::nullopt);
  if (!spec) return std::unexpected(spec.error());
  if (*spec) {
    if (!(*spec)->same_layout(p.spec)) return std::optional<Plan>();
    p.spec = std::move(**spec);
  }
  return std::optional<Plan>(std::move(p));
}

Result<IcebergTableWriter::Committed> IcebergTableWriter::commit_files(const PreparedLanding& landing) {
  for (int conflicts = 0; conflicts <= kMaxConflicts; ++conflicts) {
    report_ = {};  // what an attempt that lost its race said is not what happened
    auto loaded = load_current();
    if (!loaded) return std::unexpected(loaded.error());
    auto& [base, held] = *loaded;
    Committed out;
    std::vector<const PreparedBatch*> fresh;
    for (const auto& batch : landing.batches) {
      out.held.push_back(held.has(batch.id));
      if (!out.held.back()) fresh.push_back(&batch);
    }
    if (fresh.empty()) return out;
    auto p = plan_commit(base, std::move(held), landing, fresh);
    if (!p) return std::unexpected(p.error());
    if (!*p) {
      out.stale = true;
      return out;
    }
    std::vector<DataFile> files;
    std::string ids;
    for (const auto* batch : fresh) {
      for (const auto& file : batch->files) {
        // A landing read back from a record: only files of this table's own location are committed.
        if (auto inside = relative(file.path); !inside) return std::unexpected(inside.error());
      }
      files.insert(files.end(), batch->files.begin(), batch->files.end());
      ids += (ids.empty() ? "" : ",") + batch->id.str();
    }
    failpoint::hit(failpoint::kSinkInTransaction);
    auto metadata = next_metadata(base, **p, ids, files);
    if (!metadata) return std::unexpected(metadata.error());
    committing_ = true;
    auto committed = catalog_->commit(base, *metadata);
    if (!committed) return std::unexpected(committed.error());
    if (*committed == CommitResult::kCommitted) {
      report_.conflicts = conflicts;
      report_.version = base ? base->version + 1 : 1;
      return out;
    }
    committing_ = false;
    // This attempt's manifests are named by no version: the next attempt writes its own.
    abandoned_.insert(abandoned_.end(), metadata_written_.begin(), metadata_written_.end());
    metadata_written_.clear();
    spdlog::debug("{}: another writer committed first; committing again on its snapshot", options_.what);
  }
  return fail(ErrorKind::kUnavailable,
              fmt::format("{}: lost the commit to other writers {} times in a row", options_.what, kMaxConflicts + 1));
}

}  // namespace skippr
