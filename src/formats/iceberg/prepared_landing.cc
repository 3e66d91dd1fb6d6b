#include "formats/iceberg/prepared_landing.h"

#include <fmt/format.h>

namespace skippr {
namespace {

nlohmann::json partition_value_json(const PartitionValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return nullptr;
}

PartitionValue partition_value_of(const nlohmann::json& json) {
  if (json.is_number_integer()) return json.get<int64_t>();
  if (json.is_number()) return json.get<double>();
  if (json.is_string()) return json.get<std::string>();
  return std::monostate{};
}

}  // namespace

nlohmann::json to_json(const PreparedLanding& landing) {
  nlohmann::json batches = nlohmann::json::array();
  for (const auto& b : landing.batches) {
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : b.files) {
      nlohmann::json partition = nlohmann::json::array();
      for (const auto& v : f.partition) partition.push_back(partition_value_json(v));
      files.push_back({{"path", f.path},
                       {"record_count", f.record_count},
                       {"file_size_in_bytes", f.file_size_in_bytes},
                       {"partition", std::move(partition)}});
    }
    batches.push_back({{"pipeline", b.id.pipeline},
                       {"lineage", b.id.lineage},
                       {"epoch", b.id.epoch},
                       {"seq", b.id.seq},
                       {"position_after", b.position_after.token},
                       {"files", std::move(files)}});
  }
  return {{"batches", std::move(batches)},
          {"schema", landing.schema.to_json()},
          {"last_column_id", landing.last_column_id},
          {"spec", landing.spec}};
}

Result<PreparedLanding> prepared_landing_from_json(const nlohmann::json& json, std::string_view where) {
  const auto bad = [&](std::string_view why) {
    return fail(ErrorKind::kCorruption, fmt::format("{}: not a landing skipprd wrote ({})", where, why));
  };
  if (!json.is_object() || !json.contains("batches") || !json.contains("schema") || !json.contains("spec")) {
    return bad("batches, schema or spec missing");
  }
  PreparedLanding out;
  try {
    for (const auto& b : json.at("batches")) {
      PreparedBatch batch;
      batch.id.pipeline = b.at("pipeline").get<std::string>();
      batch.id.lineage = b.at("lineage").get<std::string>();
      batch.id.epoch = b.at("epoch").get<uint64_t>();
      batch.id.seq = b.at("seq").get<uint64_t>();
      batch.position_after.token = b.at("position_after").get<std::string>();
      for (const auto& f : b.at("files")) {
        DataFile file;
        file.path = f.at("path").get<std::string>();
        file.record_count = f.at("record_count").get<int64_t>();
        file.file_size_in_bytes = f.at("file_size_in_bytes").get<int64_t>();
        for (const auto& v : f.at("partition")) file.partition.push_back(partition_value_of(v));
        batch.files.push_back(std::move(file));
      }
      out.batches.push_back(std::move(batch));
    }
    out.last_column_id = json.at("last_column_id").get<int>();
    out.spec = json.at("spec");
  } catch (const nlohmann::json::exception& e) {
    return bad(e.what());
  }
  auto schema = IcebergSchema::from_json(json.at("schema"));
  if (!schema) return bad(schema.error().message);
  out.schema = std::move(*schema);
  return out;
}

}  // namespace skippr
