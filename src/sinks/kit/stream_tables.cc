#include "sinks/kit/stream_tables.h"

#include <cctype>

#include <fmt/format.h>

#include "core/connector.h"

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

std::string folder_name(std::string_view stream) {
  const bool only_dots = stream.find_first_not_of('.') == std::string_view::npos;
  std::string out;
  for (const char c : stream) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                       c == '-' || (c == '.' && !only_dots);
    if (plain) {
      out += c;
    } else {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    }
  }
  return out;
}

std::string replace_placeholder(std::string_view templ, std::string_view name) {
  std::string out;
  size_t from = 0;
  for (size_t at; (at = templ.find(kStreamPlaceholder, from)) != std::string_view::npos;
       from = at + kStreamPlaceholder.size()) {
    out.append(templ, from, at - from);
    out += name;
  }
  out.append(templ, from);
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
  return replace_placeholder(template_, plain_identifier(stream));
}

std::string StreamTables::target_like(const std::function<std::string(std::string_view)>& target) const {
  const std::string named = target(template_);
  std::string out;
  for (size_t i = 0; i < named.size();) {
    if (named.compare(i, kStreamPlaceholder.size(), kStreamPlaceholder) == 0) {
      out += '%';  // a stream's plain name: letters, digits and _ (table_for)
      i += kStreamPlaceholder.size();
      continue;
    }
    if (named[i] == kLikeEscape || named[i] == '%' || named[i] == '_') out += kLikeEscape;
    out += named[i++];
  }
  return out;
}

bool StreamTables::may_name(std::string_view table) const {
  if (!per_stream_) return table == template_;
  // Each piece of the pattern between placeholders in order, each placeholder a plain name of one or more characters.
  const auto plain = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string_view rest = template_;
  size_t at = 0;  // in `table`
  bool after_placeholder = false;
  while (true) {
    const size_t next = rest.find(kStreamPlaceholder);
    const std::string_view piece = rest.substr(0, next);
    if (after_placeholder) {
      // The name runs to where `piece` starts: the first place after at least one plain character where it does.
      size_t found = std::string_view::npos;
      for (size_t end = at + 1; end <= table.size() && plain(table[end - 1]); ++end) {
        const bool last = next == std::string_view::npos;
        if (last ? table.substr(end) == piece : table.substr(end, piece.size()) == piece) {
          found = end;
          break;
        }
      }
      if (found == std::string_view::npos) return false;
      at = found;
    } else if (table.substr(at, piece.size()) != piece) {
      return false;
    }
    at += piece.size();
    if (next == std::string_view::npos) return at == table.size();
    rest.remove_prefix(next + kStreamPlaceholder.size());
    after_placeholder = true;
  }
}

std::string tables_as_one_name(std::string table) {
  for (size_t at; (at = table.find(kStreamPlaceholder)) != std::string::npos;) {
    table.replace(at, kStreamPlaceholder.size(), "_streams_");
  }
  return table;
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

Result<std::string> stream_prefix(std::string_view sink, std::string_view param, std::string prefix,
                                  bool source_streams) {
  const bool has_placeholder = prefix.find(kStreamPlaceholder) != std::string::npos;
  if (!source_streams && has_placeholder) {
    return fail(ErrorKind::kConfig, fmt::format("{}: {} '{}' holds {}, and the pipeline's source names one stream; "
                                                "take it out, or give the source several streams",
                                                sink, param, prefix, kStreamPlaceholder));
  }
  if (source_streams && !has_placeholder) {
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    prefix += kStreamPlaceholder;
    prefix += '/';
  }
  return prefix;
}

std::string stream_prefix_for(std::string_view prefix, std::string_view stream) {
  if (prefix.find(kStreamPlaceholder) == std::string_view::npos) return std::string(prefix);
  return replace_placeholder(prefix, folder_name(stream));
}

std::string stream_prefix_base(std::string_view prefix) {
  std::string_view base = prefix.substr(0, prefix.find(kStreamPlaceholder));
  if (base.size() < prefix.size()) {  // up to the folder the placeholder is in
    const size_t slash = base.rfind('/');
    base = slash == std::string_view::npos ? std::string_view() : base.substr(0, slash == 0 ? 1 : slash);
  }
  while (base.size() > 1 && base.back() == '/') base.remove_suffix(1);
  return std::string(base);
}

void lands_streams_in_folders(ConnectorSpec& spec, std::string_view param) {
  spec.lands_streams = true;
  for (auto& p : spec.params) {
    if (p.name == param)
      p.doc += fmt::format(" (may hold {0}; a source of several streams gets a last folder {0})", kStreamPlaceholder);
  }
}

}  // namespace skippr
