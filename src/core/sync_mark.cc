#include "core/sync_mark.h"

#include <nlohmann/json.hpp>

namespace skippr {
namespace {
constexpr const char* kEnvelopeKey = "skippr_sync";
}  // namespace

Position wrap_position(const SyncMark& mark, const Position& source) {
  const nlohmann::json envelope = {{kEnvelopeKey, {{"id", mark.sync_id}, {"ends", mark.ends_sync}}},
                                   {"source", source.token}};
  return Position{envelope.dump()};
}

std::optional<MarkedPosition> unwrap_position(const Position& position) {
  if (position.empty() || position.token.front() != '{') return std::nullopt;
  const auto envelope = nlohmann::json::parse(position.token, nullptr, /*allow_exceptions=*/false);
  if (!envelope.is_object() || !envelope.contains(kEnvelopeKey)) return std::nullopt;
  const auto& mark = envelope[kEnvelopeKey];
  if (!mark.is_object() || !mark.value("id", nlohmann::json()).is_string() ||
      !envelope.value("source", nlohmann::json()).is_string()) {
    return std::nullopt;
  }
  MarkedPosition out;
  out.mark.sync_id = mark["id"].get<std::string>();
  out.mark.ends_sync = mark.value("ends", false);
  out.source.token = envelope["source"].get<std::string>();
  return out;
}

SyncMark sync_mark_of(const Position& position_after, const BatchId& id) {
  if (auto marked = unwrap_position(position_after)) return marked->mark;
  return SyncMark{"batch " + id.str(), /*ends_sync=*/true};
}

}  // namespace skippr
