// Names in the order a person reads them: runs of digits compare as numbers, so p2 comes before p10.
#pragma once

#include <string_view>

namespace skippr {

// True when `a` comes before `b`: digit runs by value (then by length, so p01 and p1 keep a fixed order), the rest
// byte by byte.
bool natural_less(std::string_view a, std::string_view b);

}  // namespace skippr
