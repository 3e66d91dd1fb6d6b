#include "config/suggest.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace skippr::config_detail {

namespace {

char fold(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Optimal string alignment distance: Levenshtein plus adjacent transpositions, so "tabel" is one edit from "table".
// Case differences are free: "duckdb" should suggest "DuckDB".
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& known) {
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& candidate : known) {
    const size_t distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string suggestion(std::string_view word, const std::vector<std::string>& known, std::string_view what) {
  if (known.empty()) return fmt::format("; there are no {}", what);
  if (auto match = closest_match(word, known); !match.empty()) return fmt::format("; did you mean '{}'?", match);
  return fmt::format("; known {}: {}", what, join(known));
}

std::string join(const std::vector<std::string>& words, std::string_view separator) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += separator;
    out += w;
  }
  return out;
}

}  // namespace skippr::config_detail
