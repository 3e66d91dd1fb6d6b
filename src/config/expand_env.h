// ${VAR} and ${VAR:-default} in skippr.yml scalars, read from the process environment (after .env is loaded).
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace skippr::config_detail {

// ${VAR}: the variable's value; unset is an error (set-but-empty is the empty string).
// ${VAR:-default}: the default when VAR is unset or empty (as in sh).
// $$: a literal '$'. A '$' not followed by '{' or '$' is kept as is.
// On failure, the message names the variable (or the malformed reference) and what to do.
std::expected<std::string, std::string> expand_env(std::string_view text);

}  // namespace skippr::config_detail
