#include "sources/mysql/mysql_cdc_position.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <map>

namespace skippr {

uint64_t binlog_file_number(std::string_view file) {
  const auto dot = file.rfind('.');
  uint64_t n = 0;
  if (dot != std::string_view::npos) std::from_chars(file.data() + dot + 1, file.data() + file.size(), n);
  return n;
}

std::string gtid_position_with(const std::string& set, const std::string& gtid) {
  auto domain_of = [](std::string_view g) {
    uint64_t d = 0;
    std::from_chars(g.data(), g.data() + g.size(), d);
    return d;
  };
  std::map<uint64_t, std::string> by_domain;
  size_t start = 0;
  while (start < set.size()) {
    const size_t comma = std::min(set.find(',', start), set.size());
    const std::string one = set.substr(start, comma - start);
    if (!one.empty()) by_domain[domain_of(one)] = one;
    start = comma + 1;
  }
  by_domain[domain_of(gtid)] = gtid;
  std::string out;
  for (const auto& [domain, g] : by_domain) out += (out.empty() ? "" : ",") + g;
  return out;
}

Position MyCdcPosition::to_position() const {
  nlohmann::json j = {{"phase", snapshot ? "snapshot" : "stream"}, {"file", file}, {"offset", offset}};
  if (index > 0) j["index"] = index;
  if (!gtid.empty()) j["gtid"] = gtid;
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& [stream, p] : tables) {
    nlohmann::json part = {{"done", p.done}};
    if (!p.done) part["after"] = p.after;
    parts[stream] = std::move(part);
  }
  j["tables"] = std::move(parts);
  return Position{j.dump()};
}

Result<MyCdcPosition> MyCdcPosition::parse(const Position& position) {
  auto bad = [&] {
    return fail(ErrorKind::kCorruption,
                fmt::format("unreadable MySQL CDC position '{}' (not written by this source)", position.token));
  };
  const auto j = nlohmann::json::parse(position.token, nullptr, false);
  if (!j.is_object() || !j.contains("phase") || !j.contains("file") || !j["file"].is_string() ||
      !j.contains("offset") || !j["offset"].is_number_unsigned() || !j.contains("tables") || !j["tables"].is_object()) {
    return bad();
  }
  MyCdcPosition p;
  p.snapshot = j["phase"] == "snapshot";
  p.file = j["file"].get<std::string>();
  p.offset = j["offset"].get<uint64_t>();
  p.index = j.value("index", uint64_t{0});
  p.gtid = j.value("gtid", std::string());
  for (const auto& [stream, part] : j["tables"].items()) {
    if (!part.is_object() || !part.contains("done") || !part["done"].is_boolean()) return bad();
    MyTableProgress t;
    t.done = part["done"].get<bool>();
    if (part.contains("after")) {
      if (!part["after"].is_array()) return bad();
      t.after = part["after"].get<std::vector<std::string>>();
    }
    p.tables[stream] = std::move(t);
  }
  return p;
}

}  // namespace skippr
