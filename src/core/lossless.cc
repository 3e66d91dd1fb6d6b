#include "core/lossless.h"

#include <charconv>
#include <cmath>

namespace skippr {

namespace {

template <class T>
std::optional<T> parse_all(std::string_view text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

std::optional<int64_t> whole_number(std::string_view text) { return parse_all<int64_t>(text); }

std::optional<double> decimal_number(std::string_view text) {
  auto v = parse_all<double>(text);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<int64_t> integral_value(double d) {
  if (std::trunc(d) != d || std::fabs(d) > 9.0e15) return std::nullopt;
  return static_cast<int64_t>(d);
}

}  // namespace skippr
