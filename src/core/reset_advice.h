// The advice that ends a message about a WAL or state that cannot be used: RESET is the way out, and it is not free.
// It says what RESET costs, so nobody runs it thinking it only clears an error.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace skippr {

// "run RESET PIPELINE <name> to start over: ...", for the end of a sentence.
inline std::string reset_advice(std::string_view pipeline) {
  return fmt::format(
      "run RESET PIPELINE {} to start over — it reads the source again from its beginning (or from what it still "
      "keeps), so an append destination receives those rows a second time; merge_by_key and replace destinations do "
      "not",
      pipeline.empty() ? "<name>" : pipeline);
}

}  // namespace skippr
