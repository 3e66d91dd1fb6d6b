// Dates as the GoogleAnalytics source handles them: days since the Unix epoch, GA4's date grammar for start_date and
// end_date (YYYY-MM-DD, today, yesterday, NdaysAgo), and the report's own YYYYMMDD values of the `date` dimension.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace skippr {

std::optional<int64_t> parse_iso_date(std::string_view text);  // YYYY-MM-DD
std::string iso_date(int64_t days);
std::optional<int64_t> parse_report_date(std::string_view text);  // YYYYMMDD
// `text` in GA4's grammar, relative days counted back from `today`; nullopt when it is none of its forms.
std::optional<int64_t> resolve_report_date(std::string_view text, int64_t today);
// Today in UTC. GA4 closes a property's day in the property's own time zone: with the default end_date (yesterday)
// a property far from UTC has its last hours revised by the next sync's look-back.
int64_t today_utc();

}  // namespace skippr
