#include "formats/json_rows.h"

#include "core/time_util.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <cmath>

namespace skippr {

namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when it is invalid (Unicode table 3-7: no overlong
// forms, no surrogates, nothing above U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  const size_t left = text.size() - i;
  auto cont = [&](size_t k, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return k < left && byte(i + k) >= lo && byte(i + k) <= hi;
  };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (b0 == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (b0 == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (b0 >= 0xF1 && b0 <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (b0 == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void append_escaped_ascii(char c, std::string& out) {
  switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
      } else {
        out.push_back(c);
      }
  }
}

void append_value(const Column& column, size_t row, std::string& out) {
  if (!column.is_valid(row)) {
    out += "null";
    return;
  }
  switch (column.type) {
    case Type::kBool:
      out += column.int_at(row) ? "true" : "false";
      return;
    case Type::kInt64:
      fmt::format_to(std::back_inserter(out), "{}", column.int_at(row));
      return;
    case Type::kDouble: {
      const double d = column.double_at(row);
      if (std::isfinite(d)) {
        fmt::format_to(std::back_inserter(out), "{}", d);  // shortest text that reads back to the same double
      } else {
        out += "null";  // JSON has no NaN or Infinity
      }
      return;
    }
    case Type::kString:
      append_json_string(column.string_at(row), out);
      return;
    case Type::kBinary:
      append_json_string(base64_encode(column.string_at(row)), out);
      return;
    case Type::kTimestamp:
      append_json_string(format_iso8601_micros(column.int_at(row)), out);
      return;
    case Type::kDate:
      append_json_string(format_date(column.int_at(row)), out);
      return;
    case Type::kJson: {
      // Sources store JSON text they parsed, so it is embedded as is; an empty text is no value at all.
      std::string_view text = column.string_at(row);
      out += text.empty() ? "null" : text;
      return;
    }
  }
}

}  // namespace

void append_json_string(std::string_view text, std::string& out) {
  out.push_back('"');
  if (simdjson::validate_utf8(text.data(), text.size())) {
    // The common case. Only '"', '\\' and control characters need escaping: the runs between them are copied whole
    // (a byte at a time, this was the largest cost of writing JSON lines, ~15% of a Sample -> S3 profile).
    size_t run = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const auto c = static_cast<unsigned char>(text[i]);
      if (c >= 0x20 && c != '"' && c != '\\') continue;
      out.append(text.data() + run, i - run);
      append_escaped_ascii(text[i], out);
      run = i + 1;
    }
    out.append(text.data() + run, text.size() - run);
    out.push_back('"');
    return;
  }
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      append_escaped_ascii(text[i], out);
      ++i;
      continue;
    }
    if (const size_t length = utf8_sequence_length(text, i); length > 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += "\\ufffd";  // keeps the line valid JSON; the byte was not text
      ++i;
    }
  }
  out.push_back('"');
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = uint32_t(uint8_t(bytes[i])) << 16 | uint32_t(uint8_t(bytes[i + 1])) << 8 | uint8_t(bytes[i + 2]);
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], kAlphabet[n & 63]};
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[n >> 18];
    out += kAlphabet[(n >> 12) & 63];
    out += rest == 2 ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void append_row_json(const Batch& batch, size_t row, std::string& out) {
  out.push_back('{');
  for (size_t f = 0; f < batch.schema.fields.size(); ++f) {
    if (f > 0) out.push_back(',');
    append_json_string(batch.schema.fields[f].name, out);
    out.push_back(':');
    append_value(batch.columns[f], row, out);
  }
  out.push_back('}');
}

std::string row_to_json(const Batch& batch, size_t row) {
  std::string out;
  append_row_json(batch, row, out);
  return out;
}

namespace {
void append_text_value(const Column& column, size_t row, std::string& out) {
  if (!column.is_valid(row)) {
    out += "null";
    return;
  }
  switch (column.type) {
    case Type::kBool:
      out += column.int_at(row) ? "\"true\"" : "\"false\"";
      return;
    case Type::kInt64:
      out += fmt::format("\"{}\"", column.int_at(row));
      return;
    case Type::kDouble: {
      const double v = column.double_at(row);
      if (!std::isfinite(v)) {
        out += "null";
      } else {
        out += fmt::format("\"{}\"", v);
      }
      return;
    }
    case Type::kTimestamp:
      // With its zone ("...Z"), so a TIMESTAMP column gets the instant whatever the session's time zone.
      out += '"' + format_iso8601_micros(column.int_at(row)) + '"';
      return;
    case Type::kDate:
      out += '"' + format_date(column.int_at(row)) + '"';
      return;
    case Type::kBinary:
      out += '"' + base64_encode(column.string_at(row)) + '"';
      return;
    case Type::kString:
    case Type::kJson:
      append_json_string(column.string_at(row), out);
      return;
  }
}

}  // namespace

std::string text_valued_json_lines(const Batch& batch, std::string_view row_number_field) {
  std::vector<std::string> keys;
  for (const Field& field : batch.schema.fields) {
    std::string key;
    append_json_string(field.name, key);
    keys.push_back(key + ":");
  }
  std::string row_number_key;
  if (!row_number_field.empty()) {
    append_json_string(row_number_field, row_number_key);
    row_number_key = "," + row_number_key + ":";
  }
  std::string out;
  out.reserve(batch.byte_size() * 2 + batch.rows * 16);
  for (size_t r = 0; r < batch.rows; ++r) {
    out += '{';
    for (size_t f = 0; f < batch.columns.size(); ++f) {
      if (f) out += ',';
      out += keys[f];
      append_text_value(batch.columns[f], r, out);
    }
    if (!row_number_key.empty()) out += fmt::format("{}\"{}\"", row_number_key, r);
    out += "}\n";
  }
  return out;
}

}  // namespace skippr
