#include "formats/iceberg/iceberg_schema.h"

#include <fmt/format.h>

#include <algorithm>

namespace skippr {

const IcebergField* IcebergSchema::find(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const IcebergField* IcebergSchema::find(int id) const {
  for (const auto& f : fields) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

nlohmann::json IcebergSchema::to_json() const {
  nlohmann::json out = {{"type", "struct"}, {"schema-id", schema_id}, {"fields", nlohmann::json::array()}};
  for (const auto& f : fields) {
    out["fields"].push_back({{"id", f.id}, {"name", f.name}, {"required", f.required}, {"type", f.type}});
  }
  return out;
}

Result<IcebergSchema> IcebergSchema::from_json(const nlohmann::json& j) {
  IcebergSchema s;
  try {
    s.schema_id = j.value("schema-id", 0);
    for (const auto& f : j.at("fields")) {
      if (!f.at("type").is_string()) {
        return fail(ErrorKind::kBadInput, fmt::format("field '{}' has a nested type, which this writer does not write",
                                                      f.value("name", std::string())));
      }
      s.fields.push_back({f.at("id").get<int>(), f.at("name").get<std::string>(), f.at("type").get<std::string>(),
                          f.value("required", false)});
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorKind::kBadInput, fmt::format("an Iceberg schema that cannot be read: {}", e.what()));
  }
  return s;
}

std::string_view iceberg_type(Type type) {
  switch (type) {
    case Type::kBool:
      return "boolean";
    case Type::kInt64:
      return "long";
    case Type::kDouble:
      return "double";
    case Type::kBinary:
      return "binary";
    case Type::kTimestamp:
      return "timestamptz";
    case Type::kDate:
      return "date";
    case Type::kString:
    case Type::kJson:
      return "string";
  }
  return "string";
}

namespace {
// The promotions the spec allows, from the table's type to the batch's.
bool promotes(std::string_view from, std::string_view to) {
  return (from == "int" && to == "long") || (from == "float" && to == "double");
}
}  // namespace

Result<std::optional<IcebergSchema>> evolve_schema(const std::optional<IcebergSchema>& current, const Schema& batch,
                                                   int& last_column_id, std::string_view where) {
  IcebergSchema next = current ? *current : IcebergSchema{};
  bool changed = !current;
  for (const auto& field : batch.fields) {
    const std::string_view type = iceberg_type(field.type);
    IcebergField* have = nullptr;
    for (auto& f : next.fields) {
      if (f.name == field.name) have = &f;
    }
    if (!have) {
      next.fields.push_back({++last_column_id, field.name, std::string(type), false});
      changed = true;
    } else if (have->type != type) {
      if (!promotes(have->type, type)) {
        return fail(
            ErrorKind::kBadInput,
            fmt::format(
                "{}: field '{}' is {} in the table and {} in this batch; Iceberg can only widen int "
                "to long and float to double. Point the sink at a new table (its `table`), which takes the waiting "
                "batches too; casting the field at the source fixes only batches not read yet",
                where, field.name, have->type, type));
      }
      have->type = std::string(type);
      changed = true;
    }
  }
  if (!changed) return std::optional<IcebergSchema>();
  if (current) next.schema_id = current->schema_id + 1;
  return std::optional<IcebergSchema>(std::move(next));
}

std::optional<IcebergSchema> schema_for_files(const IcebergSchema& current, int current_last_column_id,
                                              const IcebergSchema& files) {
  IcebergSchema out = current;
  for (const auto& field : files.fields) {
    if (auto have = std::ranges::find(out.fields, field.id, &IcebergField::id); have != out.fields.end()) {
      if (have->name != field.name) return std::nullopt;
      if (promotes(have->type, field.type)) {
        have->type = field.type;  // the files hold the wider type: the table widens
      } else if (have->type != field.type && !promotes(field.type, have->type)) {
        return std::nullopt;  // (a narrower type in the files is read as the table's wider one)
      }
      continue;
    }
    // A field the table lacks: its id must be one the table never gave out, its name not another field's.
    if (field.id <= current_last_column_id || out.find(field.name)) return std::nullopt;
    out.fields.push_back(field);
  }
  return out;
}

}  // namespace skippr
