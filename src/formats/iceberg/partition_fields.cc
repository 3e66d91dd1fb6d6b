#include "formats/iceberg/partition_fields.h"

#include "core/time_util.h"

namespace skippr {
namespace {

constexpr int64_t kMicrosPerDay = 86'400'000'000LL;

// The batch type that lands as Iceberg type `type` (iceberg_type's inverse, int and float widened).
Type batch_type(std::string_view type) {
  if (type == "boolean") return Type::kBool;
  if (type == "int" || type == "long") return Type::kInt64;
  if (type == "float" || type == "double") return Type::kDouble;
  if (type == "binary") return Type::kBinary;
  if (type == "date") return Type::kDate;
  if (type == "timestamptz" || type == "timestamp") return Type::kTimestamp;
  return Type::kString;
}

// Column `f` of `batch` parsed as ISO-8601 into `target` (kTimestamp or kDate); what does not parse becomes null
// there and keeps its text in a new `<field>__skippr_unparsed` column.
void parse_timestamps(Batch& batch, size_t f, Type target) {
  const Column& text = batch.columns[f];
  Column parsed(target);
  Column unparsed(Type::kString);
  bool any_unparsed = false;
  for (size_t row = 0; row < batch.rows; ++row) {
    const auto micros = text.is_valid(row) ? parse_iso8601_micros(text.string_at(row)) : std::nullopt;
    if (micros) {
      parsed.append_int(target == Type::kDate ? (*micros >= 0 ? *micros / kMicrosPerDay
                                                              : -((-*micros + kMicrosPerDay - 1) / kMicrosPerDay))
                                              : *micros);
      unparsed.append_null();
    } else if (text.is_valid(row)) {
      parsed.append_null();
      unparsed.append_string(text.string_at(row));
      any_unparsed = true;
    } else {
      parsed.append_null();
      unparsed.append_null();
    }
  }
  const std::string name = batch.schema.fields[f].name;
  batch.columns[f] = std::move(parsed);
  batch.schema.fields[f].type = target;
  if (any_unparsed) {
    batch.schema.fields.push_back({name + std::string(kUnparsedSuffix), Type::kString});
    batch.columns.push_back(std::move(unparsed));
  }
}

}  // namespace

std::optional<Batch> fit_partition_fields(const Batch& batch, const std::vector<PartitionRequest>& partition_by,
                                          const std::optional<IcebergSchema>& table) {
  std::optional<Batch> fitted;
  auto editable = [&]() -> Batch& {
    if (!fitted) fitted = batch;
    return *fitted;
  };
  for (const auto& request : partition_by) {
    const bool temporal = request.transform != Transform::kIdentity;
    const IcebergField* known = table ? table->find(request.source_name) : nullptr;
    const int f = batch.schema.index_of(request.source_name);
    if (f < 0) {
      const Type type = known ? batch_type(known->type) : temporal ? Type::kTimestamp : Type::kString;
      editable().add_column({request.source_name, type});
      continue;
    }
    if (!temporal || batch.schema.fields[static_cast<size_t>(f)].type != Type::kString) continue;
    const Type target = known && known->type == "date" ? Type::kDate : Type::kTimestamp;
    parse_timestamps(editable(), static_cast<size_t>(f), target);
  }
  return fitted;
}

}  // namespace skippr
