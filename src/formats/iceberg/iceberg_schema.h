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

// True when `planned` (the schema files were written under) is `current` evolved as evolve_schema does it: each of
// `current`'s fields in it under the same id and name, its type the same or promoted, and each other field's id above
// `current_last_column_id` (given out after `current`). False when another writer changed the table in between.
bool extends_schema(const IcebergSchema& current, int current_last_column_id, const IcebergSchema& planned);

}  // namespace skippr
