#include "config/parse_text.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace skippr::config_detail {

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

namespace {

template <class T>
std::optional<T> parse_whole(std::string_view text) {
  // from_chars rejects a leading '+', which people do write ("+5"); accept it for numbers.
  if (text.size() > 1 && text.front() == '+') text.remove_prefix(1);
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

std::optional<int64_t> parse_int64(std::string_view text) { return parse_whole<int64_t>(trim(text)); }

std::optional<uint64_t> parse_uint64(std::string_view text) {
  return parse_whole<uint64_t>(trim(text));  // from_chars rejects "-1" for unsigned types
}

std::optional<double> parse_double(std::string_view text) {
  auto value = parse_whole<double>(trim(text));
  if (!value || !std::isfinite(*value)) return std::nullopt;
  return value;
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string word = lower(trim(text));
  if (word == "true" || word == "yes" || word == "on" || word == "1") return true;
  if (word == "false" || word == "no" || word == "off" || word == "0") return false;
  return std::nullopt;
}

std::optional<uint64_t> parse_byte_size(std::string_view text) {
  text = trim(text);
  static constexpr std::array<std::pair<std::string_view, uint64_t>, 9> kUnits = {{
      {"KiB", 1ull << 10},
      {"MiB", 1ull << 20},
      {"GiB", 1ull << 30},
      {"TiB", 1ull << 40},
      {"KB", 1000ull},
      {"MB", 1000ull * 1000},
      {"GB", 1000ull * 1000 * 1000},
      {"TB", 1000ull * 1000 * 1000 * 1000},
      {"B", 1},
  }};
  uint64_t multiplier = 1;
  for (const auto& [unit, factor] : kUnits) {
    if (text.ends_with(unit)) {
      text = trim(text.substr(0, text.size() - unit.size()));
      multiplier = factor;
      break;
    }
  }
  auto number = parse_uint64(text);
  if (!number || *number > std::numeric_limits<uint64_t>::max() / multiplier) return std::nullopt;
  return *number * multiplier;
}

}  // namespace skippr::config_detail
