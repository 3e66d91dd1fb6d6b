#include "clients/sql/sql_literals.h"

namespace skippr {

std::string backslash_quoted_literal(std::string_view text) {
  std::string out = "'";
  out.reserve(text.size() + 2);
  for (char c : text) {
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace skippr
