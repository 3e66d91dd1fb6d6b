#include "sources/postgres/cdc_position.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "sources/postgres/replication_stream.h"

namespace skippr {

Position CdcPosition::to_position() const {
  nlohmann::json j = {{"slot", slot}, {"phase", snapshot ? "snapshot" : "stream"}};
  if (per_table) {
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [stream, table] : tables) {
      nlohmann::json part = nlohmann::json::object();
      if (!table.done) {
        part["done"] = false;
        part["after"] = table.after;
      }
      if (table.since) part["since"] = format_lsn(table.since);
      if (table.resync) part["resync"] = table.resync;
      parts[stream] = std::move(part);
    }
    j["tables"] = std::move(parts);
  }
  if (snapshot) {
    j["consistent_lsn"] = format_lsn(consistent_lsn);
    if (!per_table) j["after"] = after;
  } else {
    j["lsn"] = format_lsn(lsn);
    j["index"] = index;
    j["tx_done"] = tx_done;
    if (tx_done) j["end_lsn"] = format_lsn(end_lsn);
  }
  return Position{j.dump()};
}

Result<CdcPosition> CdcPosition::parse(const Position& position) {
  auto bad = [&] {
    return fail(ErrorKind::kCorruption, fmt::format("unreadable CDC resume position '{}'", position.token));
  };
  auto j = nlohmann::json::parse(position.token, nullptr, false);
  if (!j.is_object() || !j.contains("slot") || !j["slot"].is_string() || !j.contains("phase")) return bad();
  CdcPosition p;
  p.slot = j["slot"].get<std::string>();
  auto lsn_field = [&](const char* name) -> std::optional<uint64_t> {
    if (!j.contains(name) || !j[name].is_string()) return std::nullopt;
    return parse_lsn(j[name].get<std::string>());
  };
  auto strings = [](const nlohmann::json& values, std::vector<std::string>& out) {
    if (!values.is_array()) return false;
    for (const auto& v : values) {
      if (!v.is_string()) return false;
      out.push_back(v.get<std::string>());
    }
    return true;
  };
  if (j.contains("tables")) {
    if (!j["tables"].is_object()) return bad();
    p.per_table = true;
    for (const auto& [stream, part] : j["tables"].items()) {
      CdcTableProgress table;
      if (!part.is_object()) return bad();
      if (part.contains("done") && !part["done"].is_boolean()) return bad();
      table.done = part.value("done", true);
      if (!table.done && (!part.contains("after") || !strings(part["after"], table.after))) return bad();
      if (part.contains("since")) {
        auto since = part["since"].is_string() ? parse_lsn(part["since"].get<std::string>()) : std::nullopt;
        if (!since) return bad();
        table.since = *since;
      }
      if (part.contains("resync")) {
        if (!part["resync"].is_number_unsigned()) return bad();
        table.resync = part["resync"].get<uint64_t>();
      }
      p.tables.emplace(stream, std::move(table));
    }
  }
  if (j["phase"] == "snapshot") {
    auto consistent = lsn_field("consistent_lsn");
    if (!consistent || (!p.per_table && (!j.contains("after") || !strings(j["after"], p.after)))) return bad();
    p.snapshot = true;
    p.consistent_lsn = *consistent;
    return p;
  }
  auto lsn = lsn_field("lsn");
  if (j["phase"] != "stream" || !lsn || !j.contains("index") || !j["index"].is_number_unsigned()) return bad();
  p.lsn = *lsn;
  p.index = j["index"].get<uint64_t>();
  p.tx_done = j.value("tx_done", false);
  if (p.tx_done) {
    auto end = lsn_field("end_lsn");
    if (!end) return bad();
    p.end_lsn = *end;
  }
  return p;
}

}  // namespace skippr
