#include "core/time_util.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace skippr {

std::optional<int64_t> parse_iso8601_micros(std::string_view text) {
  std::string s(text);
  int year, month, day, hour = 0, minute = 0, second = 0, consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &consumed) != 3) return std::nullopt;
  size_t pos = static_cast<size_t>(consumed);
  int64_t fraction_us = 0;
  int offset_minutes = 0;
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
    int n = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d:%2d%n", &hour, &minute, &second, &n) != 3) return std::nullopt;
    pos += 1 + static_cast<size_t>(n);
    if (pos < s.size() && s[pos] == '.') {
      int64_t scale = 100000;
      for (++pos; pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos])); ++pos) {
        fraction_us += (s[pos] - '0') * scale;
        scale /= 10;
      }
    }
    if (pos < s.size() && s[pos] == 'Z') {
      ++pos;
    } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
      int oh = 0, om = 0;
      if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d", &oh, &om) < 1) return std::nullopt;
      offset_minutes = (s[pos] == '-' ? -1 : 1) * (oh * 60 + om);
      pos = s.size();
    }
  }
  if (pos != s.size() || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const int64_t seconds = static_cast<int64_t>(timegm(&tm)) - offset_minutes * 60;
  return seconds * 1000000 + fraction_us;
}

std::string format_iso8601_micros(int64_t micros) {
  using namespace std::chrono;
  const sys_time<microseconds> time{microseconds{micros}};
  const auto day = floor<days>(time);
  const year_month_day date{day};
  const hh_mm_ss clock{time - day};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", static_cast<int>(date.year()),
                     static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()), clock.hours().count(),
                     clock.minutes().count(), clock.seconds().count(), clock.subseconds().count());
}

std::string format_date(int64_t days_since_epoch) {
  using namespace std::chrono;
  const year_month_day date{sys_days{days{days_since_epoch}}};
  return fmt::format("{:04}-{:02}-{:02}", static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                     static_cast<unsigned>(date.day()));
}

int64_t now_micros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace skippr
