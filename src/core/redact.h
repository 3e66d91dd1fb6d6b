// Secrets never reach a message, a log line or a file we write: text that may quote a library's error is passed
// through redact() with every secret the connector was given.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace skippr {

inline constexpr std::string_view kRedacted = "***";

// `text` with every occurrence of each non-empty secret replaced by ***, longest secrets first (so a secret that
// contains another is removed whole).
std::string redact(std::string text, std::vector<std::string> secrets);

// Percent-decoding as URIs use it ("%40" -> "@"); an invalid escape is kept as it is.
std::string percent_decode(std::string_view text);

}  // namespace skippr
