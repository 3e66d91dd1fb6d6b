#include "formats/iceberg/glue_catalog.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <regex>

#include "formats/iceberg/iceberg_schema.h"

namespace skippr {
namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes));
  std::string out;
  for (unsigned char c : raw) out += fmt::format("{:02x}", c);
  return out;
}

class GlueCatalog final : public IcebergCatalog {
 public:
  GlueCatalog(TableStore& store, GlueClient glue, std::string database, std::string table)
      : store_(store), glue_(std::move(glue)), database_(std::move(database)), table_(std::move(table)) {}

  std::string where() const override { return fmt::format("Glue table {}.{} ({})", database_, table_, store_.where()); }

  Result<std::optional<TableVersion>> load() override {
    auto table = glue_.get_table(database_, table_);
    if (!table) return std::unexpected(table.error());
    if (!*table) return std::optional<TableVersion>();
    const auto parameters = (*table)->value("Parameters", nlohmann::json::object());
    if (upper(parameters.value("table_type", std::string())) != "ICEBERG") {
      return fail(ErrorKind::kConfig, fmt::format("{} exists and is not an Iceberg table (table_type is '{}'); name "
                                                  "another table",
                                                  where(), parameters.value("table_type", std::string())));
    }
    const std::string location = parameters.value("metadata_location", std::string());
    const std::string root = store_.uri("");
    if (!location.starts_with(root)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: its metadata_location {} is not under {}; point bucket and "
                                                  "prefix at the table's location",
                                                  where(), location, root));
    }
    auto text = store_.read(location.substr(root.size()));
    if (!text) return std::unexpected(text.error());
    if (!*text) {
      return fail(ErrorKind::kCorruption, fmt::format("{}: its metadata file {} is missing", where(), location));
    }
    auto metadata = nlohmann::json::parse(**text, nullptr, false);
    if (!metadata.is_object()) {
      return fail(ErrorKind::kCorruption, fmt::format("{}: {} is not JSON", where(), location));
    }
    // Iceberg's own names: <version, 5 digits>-<uuid>.metadata.json.
    static const std::regex numbered(R"(.*/(\d+)-[^/]*\.metadata\.json$)");
    std::smatch m;
    int64_t version = 0;
    if (std::regex_match(location, m, numbered)) version = std::stoll(m[1].str());
    return std::optional<TableVersion>(
        TableVersion{std::move(metadata), location, version, (*table)->value("VersionId", std::string())});
  }

  Result<CommitResult> commit(const std::optional<TableVersion>& base, const nlohmann::json& metadata) override {
    const int64_t next = base ? base->version + 1 : 0;
    const std::string rel = fmt::format("metadata/{:05}-{}.metadata.json", next, random_hex(16));
    auto created = store_.create(rel, metadata.dump(2));
    if (!created) return std::unexpected(created.error());
    if (*created == CreateOutcome::kAlreadyExists) return CommitResult::kConflict;
    nlohmann::json input = table_input(metadata, store_.uri(rel), base ? base->location : "");
    if (!base) {
      auto made = glue_.create_table(database_, input);
      if (!made) return std::unexpected(made.error());
      return *made == GlueWrite::kApplied ? CommitResult::kCommitted : CommitResult::kConflict;
    }
    // Glue checks VersionId; servers that ignore it (moto) still have a moved metadata_location caught here,
    // though not atomically.
    auto current = glue_.get_table(database_, table_);
    if (!current) return std::unexpected(current.error());
    if (!*current ||
        (*current)->value("Parameters", nlohmann::json::object()).value("metadata_location", "") != base->location) {
      return CommitResult::kConflict;
    }
    // UpdateTable replaces the parameters: keep what others set there.
    auto parameters = (*current)->value("Parameters", nlohmann::json::object());
    parameters.update(input["Parameters"]);
    input["Parameters"] = std::move(parameters);
    auto updated = glue_.update_table(database_, input, base->token);
    if (!updated) return std::unexpected(updated.error());
    return *updated == GlueWrite::kApplied ? CommitResult::kCommitted : CommitResult::kConflict;
  }

 private:
  nlohmann::json table_input(const nlohmann::json& metadata, const std::string& location,
                             const std::string& previous) const {
    nlohmann::json columns = nlohmann::json::array();
    for (const auto& s : metadata.value("schemas", nlohmann::json::array())) {
      if (s.value("schema-id", -1) != metadata.value("current-schema-id", 0)) continue;
      for (const auto& f : s.value("fields", nlohmann::json::array())) {
        columns.push_back({{"Name", f.value("name", "")}, {"Type", glue_type(f.value("type", "string"))}});
      }
    }
    nlohmann::json parameters = {{"table_type", "ICEBERG"}, {"metadata_location", location}};
    if (!previous.empty()) parameters["previous_metadata_location"] = previous;
    return {{"Name", table_},
            {"TableType", "EXTERNAL_TABLE"},
            {"Parameters", parameters},
            {"StorageDescriptor", {{"Location", metadata.value("location", "")}, {"Columns", columns}}}};
  }

  TableStore& store_;
  GlueClient glue_;
  std::string database_;
  std::string table_;
};

}  // namespace

std::string glue_type(std::string_view iceberg_type) {
  if (iceberg_type == "long") return "bigint";
  if (iceberg_type == "timestamptz") return "timestamp";
  if (iceberg_type == "boolean" || iceberg_type == "double" || iceberg_type == "date" || iceberg_type == "binary" ||
      iceberg_type == "int" || iceberg_type == "float") {
    return std::string(iceberg_type);
  }
  return "string";
}

std::unique_ptr<IcebergCatalog> glue_catalog(TableStore& store, GlueClient glue, std::string database,
                                             std::string table) {
  return std::make_unique<GlueCatalog>(store, std::move(glue), std::move(database), std::move(table));
}

}  // namespace skippr
