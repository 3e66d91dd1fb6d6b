// "Did you mean ...?" for a misspelt key or type name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skippr::config_detail {

// The known word closest to `word` when it is plausibly a typo of it, else empty.
std::string closest_match(std::string_view word, const std::vector<std::string>& known);

// "; did you mean 'table'?" when one is close, else "; known <what>: a, b" (or "; there are none").
std::string suggestion(std::string_view word, const std::vector<std::string>& known, std::string_view what);

std::string join(const std::vector<std::string>& words, std::string_view separator = ", ");

}  // namespace skippr::config_detail
