#include "core/identifier_limit.h"

#include <fmt/format.h>

#include <algorithm>

namespace skippr {
namespace {

constexpr size_t kSuffixBytes = 9;  // "_" + 8 hex digits

// A UTF-8 continuation byte (10xxxxxx) cannot start a character: a cut before one splits a character.
bool continues_character(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string fit_identifier(std::string_view name, size_t max_bytes, std::string_view suffix) {
  if (max_bytes == 0 || name.size() + suffix.size() <= max_bytes) return fmt::format("{}{}", name, suffix);
  uint32_t hash = 2166136261u;  // FNV-1a
  for (unsigned char c : name) hash = (hash ^ c) * 16777619u;
  const size_t room = kSuffixBytes + suffix.size();
  size_t keep = std::min(name.size(), max_bytes > room ? max_bytes - room : 0);
  while (keep > 0 && continues_character(name[keep])) --keep;
  return fmt::format("{}_{:08x}{}", name.substr(0, keep), hash, suffix);
}

bool fit_field_names(Schema& schema, size_t max_bytes) {
  bool renamed = false;
  for (Field& field : schema.fields) {
    if (max_bytes == 0 || field.name.size() <= max_bytes) continue;
    field.name = fit_identifier(field.name, max_bytes);
    renamed = true;
  }
  return renamed;
}

std::vector<std::string> fit_identifiers(const std::vector<std::string>& names, size_t max_bytes) {
  std::vector<std::string> fitted;
  fitted.reserve(names.size());
  for (const auto& name : names) fitted.push_back(fit_identifier(name, max_bytes));
  return fitted;
}

}  // namespace skippr
