#include "sources/google_analytics/report_dates.h"

#include <fmt/format.h>

#include <charconv>
#include <chrono>

namespace skippr {
namespace {

std::optional<int64_t> digits(std::string_view text) {
  int64_t value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<int64_t> days_of(std::optional<int64_t> y, std::optional<int64_t> m, std::optional<int64_t> d) {
  if (!y || !m || !d) return std::nullopt;
  const std::chrono::year_month_day ymd{std::chrono::year(static_cast<int>(*y)),
                                        std::chrono::month(static_cast<unsigned>(*m)),
                                        std::chrono::day(static_cast<unsigned>(*d))};
  if (!ymd.ok()) return std::nullopt;
  return std::chrono::sys_days(ymd).time_since_epoch().count();
}

}  // namespace

std::optional<int64_t> parse_iso_date(std::string_view text) {
  if (text.size() != 10 || text[4] != '-' || text[7] != '-') return std::nullopt;
  return days_of(digits(text.substr(0, 4)), digits(text.substr(5, 2)), digits(text.substr(8, 2)));
}

std::string iso_date(int64_t days) {
  const std::chrono::year_month_day ymd{std::chrono::sys_days(std::chrono::days(days))};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                     static_cast<unsigned>(ymd.day()));
}

std::optional<int64_t> parse_report_date(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  return days_of(digits(text.substr(0, 4)), digits(text.substr(4, 2)), digits(text.substr(6, 2)));
}

std::optional<int64_t> resolve_report_date(std::string_view text, int64_t today) {
  if (text == "today") return today;
  if (text == "yesterday") return today - 1;
  if (text.ends_with("daysAgo")) {
    auto n = digits(text.substr(0, text.size() - 7));
    if (!n) return std::nullopt;
    return today - *n;
  }
  return parse_iso_date(text);
}

int64_t today_utc() {
  return std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()).time_since_epoch().count();
}

}  // namespace skippr
