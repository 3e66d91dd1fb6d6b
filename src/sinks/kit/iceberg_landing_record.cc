#include "sinks/kit/iceberg_landing_record.h"

#include <fmt/format.h>

#include "sinks/kit/stream_tables.h"

namespace skippr {

std::string landing_record_folder(std::string_view tables_pattern, std::string_view pipeline) {
  return fmt::format(".skippr-landings/{}/{}", tables_as_one_name(std::string(tables_pattern)), pipeline);
}

std::string landing_record_name(const BatchId& tip) { return fmt::format("{:020}-{:020}.json", tip.epoch, tip.seq); }

std::string landing_record_json(const IcebergLandingRecord& record) {
  nlohmann::json tables = nlohmann::json::array();
  for (const auto& [table, landing] : record.tables)
    tables.push_back({{"table", table}, {"landing", to_json(landing)}});
  return nlohmann::json{{"tip",
                         {{"batch_id", record.tip.batch_id},
                          {"position_after", record.tip.position_after.token},
                          {"max_epoch", record.tip.max_epoch}}},
                        {"tables", std::move(tables)}}
      .dump();
}

Result<IcebergLandingRecord> parse_landing_record(std::string_view text, std::string_view where) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  const auto bad = [&] {
    return fail(ErrorKind::kCorruption,
                fmt::format("{} cannot be read as a landing record (a partial copy of the lake?); restore it "
                            "from the lake it was copied from. Without it, the batches it lists may be missing from "
                            "some of the pipeline's tables",
                            where));
  };
  if (!json.is_object() || !json.contains("tip") || !json.contains("tables")) return bad();
  IcebergLandingRecord record;
  try {
    const auto& tip = json.at("tip");
    record.tip.batch_id = tip.at("batch_id").get<std::string>();
    record.tip.position_after.token = tip.at("position_after").get<std::string>();
    record.tip.max_epoch = tip.at("max_epoch").get<uint64_t>();
    for (const auto& t : json.at("tables")) {
      auto landing = prepared_landing_from_json(t.at("landing"), where);
      if (!landing) return std::unexpected(landing.error());
      record.tables.emplace_back(t.at("table").get<std::string>(), std::move(*landing));
    }
  } catch (const nlohmann::json::exception&) {
    return bad();
  }
  return record;
}

}  // namespace skippr
