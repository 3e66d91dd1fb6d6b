#include "formats/iceberg/partition_spec.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <regex>

#include "core/crc32c.h"
#include "core/time_util.h"

namespace skippr {
namespace {

constexpr int64_t kMicrosPerHour = 3'600'000'000LL;
constexpr int64_t kMicrosPerDay = 24 * kMicrosPerHour;

const char* transform_name(Transform t) {
  switch (t) {
    case Transform::kIdentity:
      return "identity";
    case Transform::kYear:
      return "year";
    case Transform::kMonth:
      return "month";
    case Transform::kDay:
      return "day";
    case Transform::kHour:
      return "hour";
  }
  return "identity";
}

std::optional<Transform> transform_from(std::string_view name) {
  for (Transform t : {Transform::kIdentity, Transform::kYear, Transform::kMonth, Transform::kDay, Transform::kHour}) {
    if (name == transform_name(t)) return t;
  }
  return std::nullopt;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::chrono::year_month_day civil(int64_t days) {
  return std::chrono::year_month_day{std::chrono::sys_days{std::chrono::days{days}}};
}

// Percent-encodes what is not unreserved in a URI, so a value never breaks a path segment.
std::string escape_segment(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// A folder name holds at most 255 bytes (S3 keys 1,024 in all): a longer escaped value is cut to its first bytes
// (never inside an escape) plus "-" and the CRC-32C of the whole value. Only the folder is shortened: readers take
// the partition's value from the manifests, whole, so two long values sharing a folder would still be told apart.
constexpr size_t kMaxFolderValueBytes = 100;

std::string folder_value(std::string_view value) {
  std::string escaped = escape_segment(value);
  if (escaped.size() <= kMaxFolderValueBytes) return escaped;
  size_t cut = kMaxFolderValueBytes - 9;
  const size_t percent = escaped.rfind('%', cut);
  if (percent != std::string::npos && percent + 3 > cut) cut = percent;
  return fmt::format("{}-{:08x}", escaped.substr(0, cut), crc32c::value(value));
}

std::string human_value(const PartitionField& field, const std::string& result_type, const PartitionValue& value) {
  if (std::holds_alternative<std::monostate>(value)) return "null";
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  const int64_t v = std::get<int64_t>(value);
  switch (field.transform) {
    case Transform::kYear:
      return fmt::format("{:04}", 1970 + v);
    case Transform::kMonth:
      return fmt::format("{:04}-{:02}", 1970 + floor_div(v, 12), v - floor_div(v, 12) * 12 + 1);
    case Transform::kDay:
      return format_date(v);
    case Transform::kHour:
      return fmt::format("{}-{:02}", format_date(floor_div(v, 24)), v - floor_div(v, 24) * 24);
    case Transform::kIdentity:
      break;
  }
  if (result_type == "boolean") return v ? "true" : "false";
  if (result_type == "date") return format_date(v);
  if (result_type == "timestamptz") return format_iso8601_micros(v);
  return fmt::format("{}", v);
}

PartitionValue value_at(const Column& column, size_t row, Transform transform) {
  if (!column.is_valid(row)) return std::monostate{};
  if (transform == Transform::kIdentity) {
    switch (column.type) {
      case Type::kDouble:
        return column.double_at(row);
      case Type::kString:
      case Type::kJson:
      case Type::kBinary:
        return std::string(column.string_at(row));
      default:
        return column.int_at(row);
    }
  }
  const int64_t v = column.int_at(row);
  const bool is_date = column.type == Type::kDate;
  const int64_t days = is_date ? v : floor_div(v, kMicrosPerDay);
  switch (transform) {
    case Transform::kHour:
      return floor_div(v, kMicrosPerHour);
    case Transform::kDay:
      return days;
    case Transform::kMonth: {
      const auto ymd = civil(days);
      return (static_cast<int64_t>(static_cast<int>(ymd.year())) - 1970) * 12 +
             static_cast<int64_t>(static_cast<unsigned>(ymd.month())) - 1;
    }
    case Transform::kYear:
      return static_cast<int64_t>(static_cast<int>(civil(days).year())) - 1970;
    case Transform::kIdentity:
      break;
  }
  return std::monostate{};
}

}  // namespace

nlohmann::json PartitionSpec::fields_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& f : fields) {
    out.push_back({{"name", f.name},
                   {"transform", transform_name(f.transform)},
                   {"source-id", f.source_id},
                   {"field-id", f.field_id}});
  }
  return out;
}

nlohmann::json PartitionSpec::to_json() const { return {{"spec-id", spec_id}, {"fields", fields_json()}}; }

Result<PartitionSpec> PartitionSpec::from_json(const nlohmann::json& j, const IcebergSchema& schema) {
  PartitionSpec spec;
  try {
    spec.spec_id = j.at("spec-id").get<int>();
    for (const auto& f : j.at("fields")) {
      const std::string transform = f.at("transform").get<std::string>();
      auto t = transform_from(transform);
      if (!t) {
        return fail(ErrorKind::kBadInput,
                    fmt::format("the table is partitioned by {}, which this writer does not compute", transform));
      }
      PartitionField pf{"", f.at("source-id").get<int>(), f.at("field-id").get<int>(), f.at("name").get<std::string>(),
                        *t};
      if (const auto* source = schema.find(pf.source_id)) pf.source_name = source->name;
      spec.fields.push_back(std::move(pf));
    }
  } catch (const nlohmann::json::exception& e) {
    return fail(ErrorKind::kBadInput, fmt::format("a partition spec that cannot be read: {}", e.what()));
  }
  return spec;
}

bool PartitionSpec::same_layout(const PartitionSpec& other) const {
  if (fields.size() != other.fields.size()) return false;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].source_name != other.fields[i].source_name || fields[i].transform != other.fields[i].transform) {
      return false;
    }
  }
  return true;
}

Result<std::vector<PartitionRequest>> parse_partition_by(const std::vector<std::string>& partition_by,
                                                         std::string_view where) {
  static const std::regex kTransformed(R"(^\s*(\w+)\s*\(\s*([^()\s]+)\s*\)\s*$)");
  std::vector<PartitionRequest> out;
  for (const auto& entry : partition_by) {
    std::smatch m;
    if (std::regex_match(entry, m, kTransformed)) {
      auto t = transform_from(m[1].str());
      if (!t || *t == Transform::kIdentity) {
        return fail(ErrorKind::kConfig,
                    fmt::format("{}: partition_by entry '{}': the transforms are year, month, day and hour (or a "
                                "field name alone for identity)",
                                where, entry));
      }
      out.push_back({m[2].str(), *t});
    } else if (entry.empty() || entry.find_first_of("() ") != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: partition_by entry '{}' is neither a field name nor transform(field), e.g. "
                              "day(event_time)",
                              where, entry));
    } else {
      out.push_back({entry, Transform::kIdentity});
    }
  }
  return out;
}

std::string partition_result_type(const PartitionField& field, const IcebergSchema& schema) {
  if (field.transform != Transform::kIdentity) return "int";
  const auto* source = schema.find(field.source_id);
  return source ? source->type : "string";
}

Result<PartitionSpec> make_partition_spec(const std::vector<PartitionRequest>& requests, const IcebergSchema& schema,
                                          std::string_view where) {
  PartitionSpec spec;
  int next_id = 1000;
  for (const auto& r : requests) {
    const auto* source = schema.find(r.source_name);
    if (!source) {
      return fail(
          ErrorKind::kBadInput,
          fmt::format("{}: partition_by names field '{}', which the first batch does not have", where, r.source_name));
    }
    const bool temporal = source->type == "date" || source->type == "timestamptz";
    if (r.transform != Transform::kIdentity &&
        (!temporal || (r.transform == Transform::kHour && source->type == "date"))) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: {}({}) needs a {} field (or ISO-8601 text); '{}' is {}: partition by '{}' "
                              "itself, or fix partition_by",
                              where, transform_name(r.transform), r.source_name,
                              r.transform == Transform::kHour ? "timestamp" : "date or timestamp", r.source_name,
                              source->type, r.source_name));
    }
    if (source->type == "binary") {
      return fail(ErrorKind::kConfig, fmt::format("{}: a binary field ('{}') cannot name a partition; fix partition_by",
                                                  where, r.source_name));
    }
    std::string name = r.source_name;
    if (r.transform != Transform::kIdentity) name += std::string("_") + transform_name(r.transform);
    spec.fields.push_back({r.source_name, source->id, next_id++, name, r.transform});
  }
  return spec;
}

std::vector<PartitionGroup> partition_rows(const Batch& batch, const PartitionSpec& spec) {
  if (spec.fields.empty()) {
    PartitionGroup all;
    all.rows.resize(batch.rows);
    for (size_t r = 0; r < batch.rows; ++r) all.rows[r] = r;
    return {std::move(all)};
  }
  std::vector<int> columns;
  for (const auto& f : spec.fields) columns.push_back(batch.schema.index_of(f.source_name));
  std::map<std::vector<PartitionValue>, size_t> index;
  std::vector<PartitionGroup> groups;
  for (size_t row = 0; row < batch.rows; ++row) {
    std::vector<PartitionValue> values;
    for (size_t i = 0; i < spec.fields.size(); ++i) {
      values.push_back(columns[i] < 0 ? PartitionValue{}
                                      : value_at(batch.columns[columns[i]], row, spec.fields[i].transform));
    }
    auto [it, added] = index.try_emplace(values, groups.size());
    if (added) groups.push_back({std::move(values), {}});
    groups[it->second].rows.push_back(row);
  }
  return groups;
}

std::string partition_path(const PartitionSpec& spec, const IcebergSchema& schema,
                           const std::vector<PartitionValue>& values) {
  std::string out;
  for (size_t i = 0; i < spec.fields.size(); ++i) {
    const std::string type = partition_result_type(spec.fields[i], schema);
    out += escape_segment(spec.fields[i].name) + "=" + folder_value(human_value(spec.fields[i], type, values[i])) + "/";
  }
  return out;
}

std::string partition_avro_schema(const PartitionSpec& spec, const IcebergSchema& schema) {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : spec.fields) {
    const std::string type = partition_result_type(f, schema);
    nlohmann::json avro;
    if (type == "int") {
      avro = "int";
    } else if (type == "long" || type == "timestamptz") {
      avro = type == "long"
                 ? nlohmann::json("long")
                 : nlohmann::json{{"type", "long"}, {"logicalType", "timestamp-micros"}, {"adjust-to-utc", true}};
    } else if (type == "date") {
      avro = {{"type", "int"}, {"logicalType", "date"}};
    } else if (type == "boolean" || type == "double" || type == "string") {
      avro = type;
    } else {
      avro = "string";
    }
    fields.push_back({{"name", f.name}, {"type", {"null", avro}}, {"default", nullptr}, {"field-id", f.field_id}});
  }
  return nlohmann::json{{"type", "record"}, {"name", "r102"}, {"fields", fields}}.dump();
}

}  // namespace skippr
