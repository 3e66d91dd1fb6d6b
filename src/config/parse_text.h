// Strict text -> value conversions shared by skippr.yml params and environment settings. Each accepts the whole
// text or nothing (no trailing garbage, no silent truncation), so callers can report the bad value as written.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace skippr::config_detail {

std::optional<int64_t> parse_int64(std::string_view text);
std::optional<uint64_t> parse_uint64(std::string_view text);
std::optional<double> parse_double(std::string_view text);  // finite only
// true/false, yes/no, on/off, 1/0 (case-insensitive).
std::optional<bool> parse_bool(std::string_view text);
// A plain byte count, or a number with a unit: B, KiB, MiB, GiB, TiB (1024-based) or KB, MB, GB, TB (1000-based).
std::optional<uint64_t> parse_byte_size(std::string_view text);

std::string_view trim(std::string_view text);

}  // namespace skippr::config_detail
