// Conversions of a value to another type that lose nothing, or nothing at all: the one rule for "a value its column
// cannot hold" (docs/guide/bad-data.md), used where a File source decides a field's values (formats/row_builder.h) and
// where a sink fits a batch to its table's columns (sinks/kit/conform_batch.h), so both take the same values.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace skippr {

// `text` as an integer when all of it is one (an optional '-' and digits; no '+', spaces or fraction) that fits.
std::optional<int64_t> whole_number(std::string_view text);
// `text` as a finite double when all of it is one number (as whole_number, plus a fraction and an exponent).
std::optional<double> decimal_number(std::string_view text);
// `d` as an integer when it has no fraction and every integer near it is a double too (|d| <= 9e15).
std::optional<int64_t> integral_value(double d);

}  // namespace skippr
