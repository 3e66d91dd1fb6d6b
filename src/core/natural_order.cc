#include "core/natural_order.h"

#include <cctype>

namespace skippr {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

bool natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t end_a = i, end_b = j;
      while (end_a < a.size() && is_digit(a[end_a])) ++end_a;
      while (end_b < b.size() && is_digit(b[end_b])) ++end_b;
      // Compare the runs as numbers without parsing (they may be longer than any integer): leading zeros aside,
      // the longer run is the larger number, and equal lengths compare digit by digit.
      size_t zi = i, zj = j;
      while (zi + 1 < end_a && a[zi] == '0') ++zi;
      while (zj + 1 < end_b && b[zj] == '0') ++zj;
      const std::string_view run_a = a.substr(zi, end_a - zi), run_b = b.substr(zj, end_b - zj);
      if (run_a.size() != run_b.size()) return run_a.size() < run_b.size();
      if (run_a != run_b) return run_a < run_b;
      if (end_a - i != end_b - j) return end_a - i < end_b - j;
      i = end_a;
      j = end_b;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace skippr
