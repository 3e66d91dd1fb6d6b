#include "formats/iceberg/manifests.h"

#include <fmt/format.h>

#include "formats/avro_file.h"

namespace skippr {
namespace {

// The spec's manifest_entry (v2), with only the optional data_file fields this writer fills: readers resolve
// fields by id and read a missing optional one as null.
std::string manifest_entry_schema(const std::string& partition_schema) {
  return fmt::format(R"({{"type":"record","name":"manifest_entry","fields":[
{{"name":"status","type":"int","field-id":0}},
{{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1}},
{{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3}},
{{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4}},
{{"name":"data_file","type":{{"type":"record","name":"r2","fields":[
{{"name":"content","type":"int","field-id":134}},
{{"name":"file_path","type":"string","field-id":100}},
{{"name":"file_format","type":"string","field-id":101}},
{{"name":"partition","type":{},"field-id":102}},
{{"name":"record_count","type":"long","field-id":103}},
{{"name":"file_size_in_bytes","type":"long","field-id":104}}]}},"field-id":2}}]}})",
                     partition_schema);
}

constexpr const char* kManifestFileSchema = R"({"type":"record","name":"manifest_file","fields":[
{"name":"manifest_path","type":"string","field-id":500},
{"name":"manifest_length","type":"long","field-id":501},
{"name":"partition_spec_id","type":"int","field-id":502},
{"name":"content","type":"int","field-id":517},
{"name":"sequence_number","type":"long","field-id":515},
{"name":"min_sequence_number","type":"long","field-id":516},
{"name":"added_snapshot_id","type":"long","field-id":503},
{"name":"added_files_count","type":"int","field-id":504},
{"name":"existing_files_count","type":"int","field-id":505},
{"name":"deleted_files_count","type":"int","field-id":506},
{"name":"added_rows_count","type":"long","field-id":512},
{"name":"existing_rows_count","type":"long","field-id":513},
{"name":"deleted_rows_count","type":"long","field-id":514}]})";

Status set_optional_long(avro_value_t& record, const char* name, std::optional<int64_t> v) {
  if (!v) return avro_set_null(record, name);
  auto branch = avro_set_branch(record, name, 1);
  if (!branch) return std::unexpected(branch.error());
  if (avro_value_set_long(&*branch, *v)) return fail(ErrorKind::kInternal, fmt::format("avro {}", name));
  return ok();
}

Status set_partition_value(avro_value_t& partition, const PartitionField& field, const std::string& type,
                           const PartitionValue& value) {
  if (std::holds_alternative<std::monostate>(value)) return avro_set_null(partition, field.name.c_str());
  auto branch = avro_set_branch(partition, field.name.c_str(), 1);
  if (!branch) return std::unexpected(branch.error());
  int rc = 0;
  if (const auto* s = std::get_if<std::string>(&value)) {
    const std::string copy = *s;
    rc = avro_value_set_string_len(&*branch, copy.c_str(), copy.size() + 1);
  } else if (const auto* d = std::get_if<double>(&value)) {
    rc = avro_value_set_double(&*branch, *d);
  } else {
    const int64_t v = std::get<int64_t>(value);
    if (type == "int" || type == "date") {
      rc = avro_value_set_int(&*branch, static_cast<int32_t>(v));
    } else if (type == "boolean") {
      rc = avro_value_set_boolean(&*branch, v != 0);
    } else {
      rc = avro_value_set_long(&*branch, v);
    }
  }
  if (rc) return fail(ErrorKind::kInternal, fmt::format("avro partition value {}: {}", field.name, avro_strerror()));
  return ok();
}

// A partition struct's values back, whatever their Avro types.
Result<std::vector<PartitionValue>> read_partition(avro_value_t& partition) {
  std::vector<PartitionValue> values;
  size_t count = 0;
  avro_value_get_size(&partition, &count);
  for (size_t i = 0; i < count; ++i) {
    avro_value_t field;
    avro_value_get_by_index(&partition, i, &field, nullptr);
    if (avro_value_get_type(&field) == AVRO_UNION) {
      avro_value_t branch;
      avro_value_get_current_branch(&field, &branch);
      field = branch;
    }
    switch (avro_value_get_type(&field)) {
      case AVRO_NULL:
        values.emplace_back();
        break;
      case AVRO_INT32: {
        int32_t v = 0;
        avro_value_get_int(&field, &v);
        values.emplace_back(int64_t{v});
        break;
      }
      case AVRO_INT64: {
        int64_t v = 0;
        avro_value_get_long(&field, &v);
        values.emplace_back(v);
        break;
      }
      case AVRO_BOOLEAN: {
        int v = 0;
        avro_value_get_boolean(&field, &v);
        values.emplace_back(int64_t{v != 0});
        break;
      }
      case AVRO_DOUBLE: {
        double v = 0;
        avro_value_get_double(&field, &v);
        values.emplace_back(v);
        break;
      }
      case AVRO_STRING: {
        const char* text = nullptr;
        size_t size = 0;
        avro_value_get_string(&field, &text, &size);
        values.emplace_back(std::string(text, size > 0 ? size - 1 : 0));
        break;
      }
      default:
        return fail(ErrorKind::kBadInput, "a manifest has a partition value of a type this writer does not write");
    }
  }
  return values;
}

}  // namespace

Result<std::string> write_manifest(const std::vector<ManifestEntry>& entries, const IcebergSchema& schema,
                                   const PartitionSpec& spec) {
  auto writer = AvroFileWriter::create(manifest_entry_schema(partition_avro_schema(spec, schema)),
                                       {{"schema", schema.to_json().dump()},
                                        {"schema-id", std::to_string(schema.schema_id)},
                                        {"partition-spec", spec.fields_json().dump()},
                                        {"partition-spec-id", std::to_string(spec.spec_id)},
                                        {"format-version", "2"},
                                        {"content", "data"}});
  if (!writer) return std::unexpected(writer.error());
  std::vector<std::string> types;
  for (const auto& f : spec.fields) types.push_back(partition_result_type(f, schema));
  for (const auto& entry : entries) {
    SKIPPR_TRY(writer->append([&](avro_value_t& record) -> Status {
      SKIPPR_TRY(avro_set_int(record, "status", static_cast<int>(entry.status)));
      SKIPPR_TRY(set_optional_long(record, "snapshot_id", entry.snapshot_id));
      SKIPPR_TRY(set_optional_long(record, "sequence_number", entry.sequence_number));
      SKIPPR_TRY(set_optional_long(record, "file_sequence_number", entry.file_sequence_number));
      auto file = avro_field(record, "data_file");
      if (!file) return std::unexpected(file.error());
      SKIPPR_TRY(avro_set_int(*file, "content", 0));
      SKIPPR_TRY(avro_set_string(*file, "file_path", entry.file.path));
      SKIPPR_TRY(avro_set_string(*file, "file_format", entry.file.format));
      auto partition = avro_field(*file, "partition");
      if (!partition) return std::unexpected(partition.error());
      for (size_t i = 0; i < spec.fields.size(); ++i) {
        SKIPPR_TRY(set_partition_value(*partition, spec.fields[i], types[i], entry.file.partition.at(i)));
      }
      SKIPPR_TRY(avro_set_long(*file, "record_count", entry.file.record_count));
      return avro_set_long(*file, "file_size_in_bytes", entry.file.file_size_in_bytes);
    }));
  }
  return writer->finish();
}

Result<std::vector<ManifestEntry>> read_manifest(std::string_view bytes) {
  std::vector<ManifestEntry> entries;
  SKIPPR_TRY(read_avro_file(bytes, [&](avro_value_t& record) -> Status {
    ManifestEntry e;
    auto status = avro_get_int(record, "status");
    if (!status) return std::unexpected(status.error());
    e.status = static_cast<EntryStatus>(*status);
    auto snapshot = avro_get_optional_long(record, "snapshot_id");
    auto seq = avro_get_optional_long(record, "sequence_number");
    auto file_seq = avro_get_optional_long(record, "file_sequence_number");
    if (!snapshot || !seq || !file_seq) return fail(ErrorKind::kBadInput, "a manifest entry without its v2 fields");
    e.snapshot_id = *snapshot;
    e.sequence_number = *seq;
    e.file_sequence_number = *file_seq;
    auto file = avro_field(record, "data_file");
    if (!file) return std::unexpected(file.error());
    auto content = avro_get_int(*file, "content");
    if (content && *content != 0) {
      return fail(ErrorKind::kBadInput, "the table has delete files, which this writer does not merge");
    }
    auto path = avro_get_string(*file, "file_path");
    auto count = avro_get_long(*file, "record_count");
    auto size = avro_get_long(*file, "file_size_in_bytes");
    if (!path || !count || !size) return fail(ErrorKind::kBadInput, "a manifest entry without its data file");
    e.file.path = *path;
    if (auto format = avro_get_string(*file, "file_format")) e.file.format = *format;
    e.file.record_count = *count;
    e.file.file_size_in_bytes = *size;
    auto partition = avro_field(*file, "partition");
    if (!partition) return std::unexpected(partition.error());
    auto values = read_partition(*partition);
    if (!values) return std::unexpected(values.error());
    e.file.partition = std::move(*values);
    entries.push_back(std::move(e));
    return ok();
  }));
  return entries;
}

Result<std::string> write_manifest_list(const std::vector<ManifestFile>& manifests, int64_t snapshot_id,
                                        std::optional<int64_t> parent_snapshot_id, int64_t sequence_number) {
  std::map<std::string, std::string> metadata = {{"snapshot-id", std::to_string(snapshot_id)},
                                                 {"sequence-number", std::to_string(sequence_number)},
                                                 {"format-version", "2"}};
  metadata["parent-snapshot-id"] = parent_snapshot_id ? std::to_string(*parent_snapshot_id) : "null";
  auto writer = AvroFileWriter::create(kManifestFileSchema, std::move(metadata));
  if (!writer) return std::unexpected(writer.error());
  for (const auto& m : manifests) {
    SKIPPR_TRY(writer->append([&](avro_value_t& r) -> Status {
      SKIPPR_TRY(avro_set_string(r, "manifest_path", m.path));
      SKIPPR_TRY(avro_set_long(r, "manifest_length", m.length));
      SKIPPR_TRY(avro_set_int(r, "partition_spec_id", m.partition_spec_id));
      SKIPPR_TRY(avro_set_int(r, "content", m.content));
      SKIPPR_TRY(avro_set_long(r, "sequence_number", m.sequence_number));
      SKIPPR_TRY(avro_set_long(r, "min_sequence_number", m.min_sequence_number));
      SKIPPR_TRY(avro_set_long(r, "added_snapshot_id", m.added_snapshot_id));
      SKIPPR_TRY(avro_set_int(r, "added_files_count", m.added_files_count));
      SKIPPR_TRY(avro_set_int(r, "existing_files_count", m.existing_files_count));
      SKIPPR_TRY(avro_set_int(r, "deleted_files_count", m.deleted_files_count));
      SKIPPR_TRY(avro_set_long(r, "added_rows_count", m.added_rows_count));
      SKIPPR_TRY(avro_set_long(r, "existing_rows_count", m.existing_rows_count));
      return avro_set_long(r, "deleted_rows_count", m.deleted_rows_count);
    }));
  }
  return writer->finish();
}

Result<std::vector<ManifestFile>> read_manifest_list(std::string_view bytes) {
  std::vector<ManifestFile> out;
  SKIPPR_TRY(read_avro_file(bytes, [&](avro_value_t& r) -> Status {
    ManifestFile m;
    auto path = avro_get_string(r, "manifest_path");
    if (!path) return std::unexpected(path.error());
    m.path = *path;
    // Fields a v1 list may lack read as 0 (content: data; sequence numbers: 0, as the spec says for v1).
    auto get = [&r](const char* name) -> int64_t {
      auto v = avro_get_optional_long(r, name);
      return v && *v ? **v : 0;
    };
    m.length = get("manifest_length");
    m.partition_spec_id = static_cast<int>(get("partition_spec_id"));
    m.content = static_cast<int>(get("content"));
    m.sequence_number = get("sequence_number");
    m.min_sequence_number = get("min_sequence_number");
    m.added_snapshot_id = get("added_snapshot_id");
    m.added_files_count = static_cast<int32_t>(get("added_files_count"));
    m.existing_files_count = static_cast<int32_t>(get("existing_files_count"));
    m.deleted_files_count = static_cast<int32_t>(get("deleted_files_count"));
    m.added_rows_count = get("added_rows_count");
    m.existing_rows_count = get("existing_rows_count");
    m.deleted_rows_count = get("deleted_rows_count");
    out.push_back(std::move(m));
    return ok();
  }));
  return out;
}

}  // namespace skippr
