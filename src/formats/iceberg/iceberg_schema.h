// Iceberg schemas (spec: "Schemas and Data Types"): the batch's types as Iceberg types, each field with the id
// every reader resolves it by, and schema evolution as the spec allows it — a new field gets a new id, a type
// change is promoted only where Iceberg permits it (int -> long, float -> double), anything else is an error.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

struct IcebergField {
  int id = 0;
  std::string name;
  std::string type;  // a primitive type name: "long", "string", "timestamptz", ...
  bool required = false;
};

struct IcebergSchema {
  int schema_id = 0;
  std::vector<IcebergField> fields;

  const IcebergField* find(std::string_view name) const;
  const IcebergField* find(int id) const;
  nlohmann::json to_json() const;
  // kBadInput for a schema with nested types or a shape we cannot read.
  static Result<IcebergSchema> from_json(const nlohmann::json& j);
};

// Our types as Iceberg's: a JSON value is its text ("string"), a timestamp an instant ("timestamptz").
std::string_view iceberg_type(Type type);

// `current` (nullopt for a new table) extended to hold every field of `batch`: returns nullopt when it already does
// as it is, else the next schema (schema_id + 1, new fields with ids from last_column_id + 1, which it advances).
// kBadInput naming the field, both types and `where` for a change Iceberg does not allow.
Result<std::optional<IcebergSchema>> evolve_schema(const std::optional<IcebergSchema>& current, const Schema& batch,
                                                   int& last_column_id, std::string_view where);

// The schema under which data files written with `files` (their field ids) can be committed to a table whose schema is
// now `current`: `current` with what the files add (fields whose ids `current` never gave out, a type they widen).
// Another writer's changes in between are kept (a column it added stays). nullopt when the ids clash (an id of the
// files names another field now, or their new field's id or name is taken): the files cannot be committed as written.
std::optional<IcebergSchema> schema_for_files(const IcebergSchema& current, int current_last_column_id,
                                              const IcebergSchema& files);

}  // namespace skippr
