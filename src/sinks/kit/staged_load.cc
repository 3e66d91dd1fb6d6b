#include "sinks/kit/staged_load.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "formats/batch_encoders.h"
#include "formats/compression.h"
#include "formats/object_encoding.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

std::string staged_csv_name(const BatchToLand& item, std::string_view part_table) {
  std::string name = batch_object_name(item.id, ObjectEncoding{OutputFormat::kCsv, Compression::kGzip});
  if (!part_table.empty()) {
    // Before the extension (a pipeline's name may hold a dot; the sequence number after the last '-' holds none).
    name.insert(name.find('.', name.rfind('-')), fmt::format("-{}", part_table));
  }
  return name;
}

Result<std::string> staged_csv_gzip(const Batch& batch) {
  return compress_buffer(encode_csv(batch), Compression::kGzip);
}

Result<std::vector<BatchLanded>> land_through_stage(std::span<const BatchToLand> group, const StagingArea& area,
                                                    const std::function<std::string(const BatchToLand&)>& staged_name,
                                                    const std::function<Result<std::string>(const BatchToLand&)>& body,
                                                    const std::function<Result<std::vector<BatchLanded>>()>& land) {
  for (const auto& item : group) {
    if (item.batch.rows == 0) continue;
    auto bytes = body(item);
    if (!bytes) return std::unexpected(bytes.error());
    const std::string name = staged_name(item);
    if (auto st = area.put(name, *bytes); !st) {
      return fail(st.error().kind == ErrorKind::kUnknownOutcome ? ErrorKind::kUnavailable : st.error().kind,
                  fmt::format("{}: staging batch {} as {}: {}", area.where, item.id.str(), name, st.error().message));
    }
  }
  auto landed = land();
  if (!landed) return landed;
  for (const auto& item : group) {
    if (item.batch.rows == 0) continue;
    if (auto st = area.remove(staged_name(item)); !st) {
      spdlog::warn("{}: could not delete the staged object of batch {} (swept at the next start): {}", area.where,
                   item.id.str(), st.error().message);
    }
  }
  return landed;
}

Status sweep_staged(const StagingArea& area, const std::string& prefix) {
  auto names = area.list(prefix);
  if (!names) {
    return fail(names.error().kind,
                fmt::format("{}: listing the staged objects under {}: {}", area.where, prefix, names.error().message));
  }
  for (const std::string& name : *names) {
    if (auto st = area.remove(name); !st) {
      spdlog::warn("{}: could not delete the staged object {} (swept again at the next start): {}", area.where, name,
                   st.error().message);
    }
  }
  return ok();
}

}  // namespace skippr
