#include "sources/postgres/cdc_position.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "sources/postgres/replication_stream.h"

namespace skippr {

Position CdcPosition::to_position() const {
  nlohmann::json j = {{"slot", slot}, {"phase", snapshot ? "snapshot" : "stream"}};
  if (snapshot) {
    j["consistent_lsn"] = format_lsn(consistent_lsn);
    j["after"] = after;
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
  if (j["phase"] == "snapshot") {
    auto consistent = lsn_field("consistent_lsn");
    if (!consistent || !j.contains("after") || !j["after"].is_array()) return bad();
    p.snapshot = true;
    p.consistent_lsn = *consistent;
    for (const auto& v : j["after"]) {
      if (!v.is_string()) return bad();
      p.after.push_back(v.get<std::string>());
    }
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

std::string cdc_order_token(uint64_t lsn, uint64_t sequence) {
  unsigned __int128 v = (static_cast<unsigned __int128>(lsn) << 32) + sequence;
  std::string digits;
  do {
    digits.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v != 0);
  std::ranges::reverse(digits);
  return digits;
}

}  // namespace skippr
