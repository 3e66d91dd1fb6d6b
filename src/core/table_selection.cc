#include "core/table_selection.h"

#include <fmt/format.h>
#include <fnmatch.h>

#include <algorithm>

namespace skippr {

namespace {

bool is_pattern(std::string_view entry) { return entry.find_first_of("*?[") != std::string_view::npos; }

// "schema.table" of an entry as written: a name without a schema is in the source's schema.
std::string qualified_entry(const std::string& entry, const std::string& default_schema) {
  return entry.find('.') == std::string::npos ? default_schema + "." + entry : entry;
}

bool matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

}  // namespace

bool TableSelection::names_streams() const {
  return include.size() > 1 || std::ranges::any_of(include, [](const std::string& e) { return is_pattern(e); });
}

SelectedTable TableSelection::single() const {
  SelectedTable out{default_schema, include.front(), ""};
  if (auto dot = out.table.find('.'); dot != std::string::npos) {
    out.schema = out.table.substr(0, dot);
    out.table = out.table.substr(dot + 1);
  }
  return out;
}

Result<std::vector<SelectedTable>> select_tables_from(const std::vector<std::pair<std::string, std::string>>& on_server,
                                                      const TableSelection& selection, std::string_view what) {
  std::vector<SelectedTable> out;
  std::vector<bool> used(selection.include.size(), false);
  for (const auto& [schema, table] : on_server) {
    const std::string name = schema + "." + table;
    bool selected = false;
    for (size_t i = 0; i < selection.include.size(); ++i) {
      const std::string& entry = selection.include[i];
      const std::string wanted = qualified_entry(entry, selection.default_schema);
      // A pattern never picks skipprd's own tables (a ledger, a landed table in the same database); a name may.
      const bool hit = is_pattern(entry) ? !table.starts_with("_skippr") && matches(wanted, name) : wanted == name;
      if (hit) used[i] = selected = true;
    }
    if (!selected) continue;
    const bool excluded = std::ranges::any_of(selection.exclude, [&](const std::string& e) {
      return matches(qualified_entry(e, selection.default_schema), name);
    });
    if (excluded) continue;
    out.push_back({schema, table, schema == selection.default_schema ? table : name});
  }
  for (size_t i = 0; i < selection.include.size(); ++i) {
    if (used[i]) continue;
    const std::string& entry = selection.include[i];
    return fail(
        ErrorKind::kConfig,
        is_pattern(entry)
            ? fmt::format("{}: tables pattern '{}' matches no table on the server; fix it or remove it", what, entry)
            : fmt::format("{}: table {} does not exist (or this user cannot see it); fix tables", what,
                          qualified_entry(entry, selection.default_schema)));
  }
  if (out.empty()) {
    return fail(
        ErrorKind::kConfig,
        fmt::format("{}: exclude_tables leaves none of the tables named in tables; nothing would be read", what));
  }
  return out;
}

void add_table_reading_params(std::vector<ParamSpec>& params, std::string tables_doc, std::string_view cdc_how) {
  params.push_back({"tables", ParamType::kStringList, true, nullptr, std::move(tables_doc)});
  params.push_back({"exclude_tables", ParamType::kStringList, false, nullptr,
                    "names and patterns of tables to leave out of those `tables` selects"});
  params.push_back({"mode", ParamType::kString, false, "incremental",
                    fmt::format("incremental | snapshot | snapshot_then_cdc (the tables, then their changes {}) | "
                                "cdc_only (changes from now on)",
                                cdc_how)});
  params.push_back({"cursor_column", ParamType::kString, false, nullptr,
                    "incremental: a column that grows with every change (updated_at, an id); the primary key breaks "
                    "ties"});
}

Position table_parts_position(bool several, const std::vector<std::pair<std::string, nlohmann::json>>& parts) {
  if (!several) return Position{parts.front().second.dump()};
  nlohmann::json by_stream = nlohmann::json::object();
  for (const auto& [stream, part] : parts) by_stream[stream] = part;
  return Position{nlohmann::json{{"tables", std::move(by_stream)}}.dump()};
}

std::optional<std::vector<nlohmann::json>> table_parts_of(const Position& position, bool several,
                                                          const std::vector<std::string>& streams) {
  const nlohmann::json parsed =
      position.empty() ? nlohmann::json() : nlohmann::json::parse(position.token, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  if (!several) return std::vector<nlohmann::json>{parsed};
  if (!parsed.is_null() && (!parsed.is_object() || !parsed.contains("tables") || !parsed["tables"].is_object())) {
    return std::nullopt;
  }
  std::vector<nlohmann::json> out;
  for (const auto& stream : streams) {
    out.push_back(parsed.is_null() ? nlohmann::json() : parsed["tables"].value(stream, nlohmann::json()));
  }
  return out;
}

bool cdc_keys_streams(const nlohmann::json& p) {
  const auto mode = p.contains("mode") && p["mode"].is_string() ? p["mode"].get<std::string>() : std::string();
  if (mode != "snapshot_then_cdc" && mode != "cdc_only") return false;
  if (!p.contains("tables") || !p["tables"].is_array()) return false;
  TableSelection selection;
  for (const auto& entry : p["tables"]) {
    if (entry.is_string()) selection.include.push_back(entry.get<std::string>());
  }
  return selection.names_streams();
}

}  // namespace skippr
