// Timestamps as the batches carry them: microseconds since the Unix epoch, UTC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace skippr {

// "2024-01-01T00:00:00Z", "2024-01-01 00:00:00", "2024-01-01T00:00:00.250+02:00", "2024-01-01".
std::optional<int64_t> parse_iso8601_micros(std::string_view text);
// "2024-01-01T00:00:00.000000Z"
std::string format_iso8601_micros(int64_t micros);
// "2024-01-01" for days since the epoch.
std::string format_date(int64_t days);
int64_t now_micros();

}  // namespace skippr
