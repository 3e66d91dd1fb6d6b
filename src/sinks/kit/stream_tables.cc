#include "sinks/kit/stream_tables.h"

#include <fmt/format.h>

namespace skippr {

namespace {

std::string plain_identifier(std::string_view stream) {
  std::string out(stream);
  for (char& c : out) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!plain) c = '_';
  }
  return out;
}

}  // namespace

std::optional<std::string> StreamTables::given(const nlohmann::json& params, std::string_view param) {
  const auto found = params.find(param);
  if (found == params.end() || !found->is_string()) return std::nullopt;
  return found->get<std::string>();
}

Result<StreamTables> StreamTables::make(std::string_view sink, std::string_view param,
                                        std::optional<std::string> given_table, bool source_streams) {
  StreamTables out;
  out.sink_ = std::string(sink);
  out.per_stream_ = source_streams;
  if (!given_table && !source_streams) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: {} is missing; name the table to land in ({} is only the default for a source of "
                            "several streams)",
                            sink, param, kStreamPlaceholder));
  }
  std::string table = given_table.value_or(std::string(kStreamPlaceholder));
  const bool has_placeholder = table.find(kStreamPlaceholder) != std::string::npos;
  if (table.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {} is empty; name the table to land in", sink, param));
  }
  if (source_streams && !table.empty() && table.find(kStreamPlaceholder) == std::string::npos) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: {} '{}' would put every stream of the source in one table; write {} where the "
                            "stream's name goes (for example {}_{}, or {} for the stream's name alone)",
                            sink, param, table, kStreamPlaceholder, table, kStreamPlaceholder, kStreamPlaceholder));
  }
  if (!source_streams && has_placeholder) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {} '{}' holds {}, and the pipeline's source names one stream; "
                                                "name the table, or give the source several streams",
                                                sink, param, table, kStreamPlaceholder));
  }
  out.template_ = std::move(table);
  return out;
}

std::string StreamTables::table_for(std::string_view stream) const {
  if (!per_stream_) return template_;
  std::string out;
  const std::string name = plain_identifier(stream);
  size_t from = 0;
  for (size_t at; (at = template_.find(kStreamPlaceholder, from)) != std::string::npos;
       from = at + kStreamPlaceholder.size()) {
    out.append(template_, from, at - from);
    out += name;
  }
  out.append(template_, from);
  return out;
}

Status StreamTables::claim(std::string_view stream, const std::string& table,
                           const std::function<std::string(std::string_view)>& fold) {
  const std::string folded = fold(table);
  auto [it, added] = streams_by_table_.try_emplace(folded, stream);
  if (added || it->second == stream) return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("{}: streams '{}' and '{}' would both land in table {}; nothing of '{}' landed there. "
                          "Give them tables of their own (a table pattern that keeps them apart), or leave one out "
                          "of the source",
                          sink_, it->second, stream, table, stream));
}

}  // namespace skippr
