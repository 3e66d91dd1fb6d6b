#include "sources/mysql/binlog_rows.h"

#include <fmt/format.h>
#include <mysql.h>  // before mariadb_rpl.h, which uses its types

#include <mariadb_rpl.h>

#include <charconv>
#include <cstring>
#include <ctime>

namespace skippr {
namespace {

Status malformed(std::string_view what) {
  return fail(ErrorKind::kBadInput, fmt::format("a binlog row event is malformed ({})", what));
}

uint64_t little_endian(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = n; i > 0; --i) v = (v << 8) | p[i - 1];
  return v;
}

uint64_t big_endian(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

// A length-encoded integer of the client protocol (the optional metadata uses them).
bool read_lenenc(const unsigned char*& p, const unsigned char* end, uint64_t& out) {
  if (p >= end) return false;
  const unsigned char first = *p++;
  size_t n = first < 251 ? 0 : first == 252 ? 2 : first == 253 ? 3 : first == 254 ? 8 : 99;
  if (n == 99 || static_cast<size_t>(end - p) < n) return false;
  out = n == 0 ? first : little_endian(p, n);
  p += n;
  return true;
}

bool read_lenenc_string(const unsigned char*& p, const unsigned char* end, std::string& out) {
  uint64_t n = 0;
  if (!read_lenenc(p, end, n) || static_cast<uint64_t>(end - p) < n) return false;
  out.assign(reinterpret_cast<const char*>(p), n);
  p += n;
  return true;
}

// ENUM / SET labels: per such column in order, a count then that many strings.
bool read_labels(const MARIADB_CONST_DATA& block, BinlogTableMap& map, uint8_t type) {
  const unsigned char* p = block.data;
  const unsigned char* end = p + block.length;
  for (auto& c : map.columns) {
    if (c.type != type || p == nullptr || p >= end) continue;
    uint64_t count = 0;
    if (!read_lenenc(p, end, count)) return false;
    for (uint64_t i = 0; i < count; ++i) {
      if (!read_lenenc_string(p, end, c.labels.emplace_back())) return false;
    }
  }
  return true;
}

const int kDigitBytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};

// Fraction-of-second bytes of TIME2, DATETIME2 and TIMESTAMP2 with `digits` fractional digits.
size_t fraction_bytes(unsigned digits) { return (digits + 1) / 2; }
int64_t fraction_micros(uint64_t stored, unsigned digits) {
  return static_cast<int64_t>(stored) * (digits <= 2 ? 10000 : digits <= 4 ? 100 : 1);
}

std::string date_text(unsigned year, unsigned month, unsigned day) {
  return fmt::format("{:04}-{:02}-{:02}", year, month, day);
}

}  // namespace

Result<BinlogTableMap> binlog_table_map(const st_mariadb_rpl_event& event) {
  const auto& tm = event.event.table_map;
  BinlogTableMap map;
  map.table_id = tm.table_id;
  map.schema.assign(tm.database.str, tm.database.length);
  map.table.assign(tm.table.str, tm.table.length);
  const auto* types = reinterpret_cast<const unsigned char*>(tm.column_types.str);
  const auto* meta = reinterpret_cast<const unsigned char*>(tm.metadata.str);
  const unsigned char* meta_end = meta + tm.metadata.length;
  map.columns.resize(tm.column_count);
  for (uint32_t i = 0; i < tm.column_count; ++i) {
    BinlogColumn& c = map.columns[i];
    c.type = types[i];
    size_t n = 0;
    switch (c.type) {
      case MYSQL_TYPE_FLOAT:
      case MYSQL_TYPE_DOUBLE:
      case MYSQL_TYPE_BLOB:
      case MYSQL_TYPE_GEOMETRY:
      case MYSQL_TYPE_JSON:
      case MYSQL_TYPE_TIMESTAMP2:
      case MYSQL_TYPE_DATETIME2:
      case MYSQL_TYPE_TIME2:
        n = 1;
        break;
      case MYSQL_TYPE_VARCHAR:
      case MYSQL_TYPE_VAR_STRING:
      case MYSQL_TYPE_STRING:
      case MYSQL_TYPE_NEWDECIMAL:
      case MYSQL_TYPE_BIT:
      case MYSQL_TYPE_ENUM:
      case MYSQL_TYPE_SET:
        n = 2;
        break;
      default:
        break;
    }
    if (static_cast<size_t>(meta_end - meta) < n) return std::unexpected(malformed("table map metadata").error());
    if (c.type == MYSQL_TYPE_VARCHAR || c.type == MYSQL_TYPE_VAR_STRING) {
      c.meta = static_cast<uint16_t>(little_endian(meta, 2));
    } else if (c.type == MYSQL_TYPE_STRING) {
      // byte 0: the real type (CHAR, ENUM, SET) with two bits of a long CHAR's length folded in; byte 1: the length.
      const unsigned char b0 = meta[0], b1 = meta[1];
      unsigned real = b0, length = b1;
      if ((b0 & 0x30) != 0x30) {
        real = b0 | 0x30;
        length = b1 | (((b0 & 0x30) ^ 0x30) << 4);
      }
      if (real == MYSQL_TYPE_ENUM || real == MYSQL_TYPE_SET) c.type = static_cast<uint8_t>(real);
      c.meta = static_cast<uint16_t>(length);
    } else if (n == 2) {
      c.meta = static_cast<uint16_t>((meta[0] << 8) | meta[1]);  // (precision, scale), (bits % 8, bytes)
    } else if (n == 1) {
      c.meta = meta[0];
    }
    meta += n;
  }
  if (tm.column_names.data != nullptr && tm.column_names.length > 0) {
    const unsigned char* p = tm.column_names.data;
    const unsigned char* end = p + tm.column_names.length;
    for (auto& c : map.columns) {
      if (!read_lenenc_string(p, end, c.name)) return std::unexpected(malformed("column names").error());
    }
    map.has_names = true;
  }
  if (!read_labels(tm.enum_values, map, MYSQL_TYPE_ENUM) || !read_labels(tm.set_values, map, MYSQL_TYPE_SET)) {
    return std::unexpected(malformed("ENUM or SET labels").error());
  }
  return map;
}

Result<std::string> decode_packed_decimal(const unsigned char* p, int precision, int scale, size_t& size) {
  const int intg = precision - scale;
  const int intg0 = intg / 9, intg0x = intg % 9, frac0 = scale / 9, frac0x = scale % 9;
  size = static_cast<size_t>(intg0 * 4 + kDigitBytes[intg0x] + frac0 * 4 + kDigitBytes[frac0x]);
  std::string bytes(reinterpret_cast<const char*>(p), size);
  if (bytes.empty()) return std::string("0");
  const bool negative = (static_cast<unsigned char>(bytes[0]) & 0x80) == 0;
  bytes[0] = static_cast<char>(bytes[0] ^ 0x80);
  if (negative) {
    for (auto& b : bytes) b = static_cast<char>(~b);
  }
  const auto* q = reinterpret_cast<const unsigned char*>(bytes.data());
  std::string whole, fraction;
  auto group = [&](int digits, std::string& out, bool pad) {
    const size_t n = static_cast<size_t>(digits == 9 ? 4 : kDigitBytes[digits]);
    const uint64_t v = big_endian(q, n);
    q += n;
    out += pad ? fmt::format("{:0{}}", v, digits) : fmt::format("{}", v);
  };
  if (intg0x > 0) group(intg0x, whole, true);
  for (int i = 0; i < intg0; ++i) group(9, whole, true);
  for (int i = 0; i < frac0; ++i) group(9, fraction, true);
  if (frac0x > 0) group(frac0x, fraction, true);
  const size_t first = whole.find_first_not_of('0');
  whole = first == std::string::npos ? "0" : whole.substr(first);
  const bool zero = whole == "0" && fraction.find_first_not_of('0') == std::string::npos;
  return fmt::format("{}{}{}{}", negative && !zero ? "-" : "", whole, scale > 0 ? "." : "", fraction);
}

Status decode_row_image(const BinlogTableMap& map, const unsigned char* present,
                        const std::vector<bool>& unsigned_columns, const unsigned char*& p, const unsigned char* end,
                        std::vector<std::optional<std::string>>& values) {
  const size_t count = map.columns.size();
  values.assign(count, std::nullopt);
  auto in_image = [&](size_t i) { return present == nullptr || ((present[i / 8] >> (i % 8)) & 1) != 0; };
  size_t present_count = 0;
  for (size_t i = 0; i < count; ++i) present_count += in_image(i) ? 1 : 0;
  const size_t null_bytes = (present_count + 7) / 8;
  if (static_cast<size_t>(end - p) < null_bytes) return malformed("null bitmap");
  const unsigned char* nulls = p;
  p += null_bytes;
  size_t bit = 0;
  auto need = [&](size_t n) { return static_cast<size_t>(end - p) >= n; };
  for (size_t i = 0; i < count; ++i) {
    if (!in_image(i)) continue;
    const bool is_null = ((nulls[bit / 8] >> (bit % 8)) & 1) != 0;
    ++bit;
    if (is_null) continue;
    const BinlogColumn& c = map.columns[i];
    const bool is_unsigned = i < unsigned_columns.size() && unsigned_columns[i];
    std::string text;
    auto integer = [&](size_t n) -> Status {
      if (!need(n)) return malformed("integer");
      const uint64_t raw = little_endian(p, n);
      p += n;
      if (is_unsigned) {
        text = fmt::format("{}", raw);
      } else {
        const int shift = static_cast<int>(64 - 8 * n);
        text = fmt::format("{}", static_cast<int64_t>(raw << shift) >> shift);
      }
      return ok();
    };
    switch (c.type) {
      case MYSQL_TYPE_TINY:
        SKIPPR_TRY(integer(1));
        break;
      case MYSQL_TYPE_SHORT:
        SKIPPR_TRY(integer(2));
        break;
      case MYSQL_TYPE_INT24:
        SKIPPR_TRY(integer(3));
        break;
      case MYSQL_TYPE_LONG:
        SKIPPR_TRY(integer(4));
        break;
      case MYSQL_TYPE_LONGLONG:
        SKIPPR_TRY(integer(8));
        break;
      case MYSQL_TYPE_YEAR: {
        if (!need(1)) return malformed("year");
        text = fmt::format("{}", *p == 0 ? 0 : 1900 + *p);
        p += 1;
        break;
      }
      case MYSQL_TYPE_FLOAT: {
        if (!need(4)) return malformed("float");
        float f = 0;
        std::memcpy(&f, p, 4);
        p += 4;
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(f));
        text.assign(buf, r.ptr);
        break;
      }
      case MYSQL_TYPE_DOUBLE: {
        if (!need(8)) return malformed("double");
        double d = 0;
        std::memcpy(&d, p, 8);
        p += 8;
        char buf[64];
        auto r = std::to_chars(buf, buf + sizeof buf, d);
        text.assign(buf, r.ptr);
        break;
      }
      case MYSQL_TYPE_NEWDECIMAL: {
        const int precision = c.meta >> 8, scale = c.meta & 0xff;
        size_t size = 0;
        const int intg = precision - scale;
        const size_t want =
            static_cast<size_t>((intg / 9) * 4 + kDigitBytes[intg % 9] + (scale / 9) * 4 + kDigitBytes[scale % 9]);
        if (!need(want)) return malformed("decimal");
        auto decimal = decode_packed_decimal(p, precision, scale, size);
        if (!decimal) return std::unexpected(decimal.error());
        text = std::move(*decimal);
        p += size;
        break;
      }
      case MYSQL_TYPE_BIT: {
        const size_t n = static_cast<size_t>((c.meta & 0xff) + ((c.meta >> 8) != 0 ? 1 : 0));
        if (!need(n)) return malformed("bit");
        text = fmt::format("{}", big_endian(p, n));
        p += n;
        break;
      }
      case MYSQL_TYPE_DATE: {
        if (!need(3)) return malformed("date");
        const uint64_t v = little_endian(p, 3);
        p += 3;
        text = date_text(static_cast<unsigned>(v >> 9), static_cast<unsigned>((v >> 5) & 15),
                         static_cast<unsigned>(v & 31));
        break;
      }
      case MYSQL_TYPE_DATETIME2: {
        const unsigned digits = c.meta;
        if (!need(5 + fraction_bytes(digits))) return malformed("datetime");
        const int64_t packed = static_cast<int64_t>(big_endian(p, 5)) - 0x8000000000LL;
        p += 5;
        const int64_t micros = fraction_micros(big_endian(p, fraction_bytes(digits)), digits);
        p += fraction_bytes(digits);
        const int64_t ymd = packed >> 17, hms = packed % (1 << 17);
        const int64_t ym = ymd >> 5;
        text = fmt::format(
            "{} {:02}:{:02}:{:02}.{:06}",
            date_text(static_cast<unsigned>(ym / 13), static_cast<unsigned>(ym % 13), static_cast<unsigned>(ymd % 32)),
            hms >> 12, (hms >> 6) % 64, hms % 64, micros);
        break;
      }
      case MYSQL_TYPE_TIMESTAMP2: {
        const unsigned digits = c.meta;
        if (!need(4 + fraction_bytes(digits))) return malformed("timestamp");
        const auto seconds = static_cast<time_t>(big_endian(p, 4));
        p += 4;
        const int64_t micros = fraction_micros(big_endian(p, fraction_bytes(digits)), digits);
        p += fraction_bytes(digits);
        if (seconds == 0 && micros == 0) {
          text = "0000-00-00 00:00:00";
        } else {
          std::tm tm{};
          gmtime_r(&seconds, &tm);
          text = fmt::format("{} {:02}:{:02}:{:02}.{:06}",
                             date_text(static_cast<unsigned>(tm.tm_year + 1900), static_cast<unsigned>(tm.tm_mon + 1),
                                       static_cast<unsigned>(tm.tm_mday)),
                             tm.tm_hour, tm.tm_min, tm.tm_sec, micros);
        }
        break;
      }
      case MYSQL_TYPE_TIME2: {
        const unsigned digits = c.meta;
        if (!need(3 + fraction_bytes(digits))) return malformed("time");
        int64_t packed = 0;
        int64_t whole = static_cast<int64_t>(big_endian(p, 3)) - 0x800000LL;
        if (digits <= 0) {
          packed = whole * (1LL << 24);
        } else if (digits <= 2) {
          int64_t frac = p[3];
          if (whole < 0 && frac != 0) {
            whole++;
            frac -= 0x100;
          }
          packed = whole * (1LL << 24) + frac * 10000;
        } else if (digits <= 4) {
          int64_t frac = static_cast<int64_t>(big_endian(p + 3, 2));
          if (whole < 0 && frac != 0) {
            whole++;
            frac -= 0x10000;
          }
          packed = whole * (1LL << 24) + frac * 100;
        } else {
          packed = static_cast<int64_t>(big_endian(p, 6)) - 0x800000000000LL;
        }
        p += 3 + fraction_bytes(digits);
        const bool negative = packed < 0;
        if (negative) packed = -packed;
        const int64_t hms = packed >> 24, micros = packed % (1LL << 24);
        text =
            fmt::format("{}{:02}:{:02}:{:02}", negative ? "-" : "", (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64);
        if (digits > 0) {
          const std::string six = fmt::format("{:06}", micros);
          text += "." + six.substr(0, digits);
        }
        break;
      }
      case MYSQL_TYPE_VARCHAR:
      case MYSQL_TYPE_VAR_STRING:
      case MYSQL_TYPE_STRING: {
        const size_t prefix = c.meta > 255 ? 2 : 1;
        if (!need(prefix)) return malformed("string length");
        const size_t n = little_endian(p, prefix);
        p += prefix;
        if (!need(n)) return malformed("string");
        text.assign(reinterpret_cast<const char*>(p), n);
        p += n;
        break;
      }
      case MYSQL_TYPE_ENUM: {
        const size_t n = c.meta == 2 ? 2 : 1;
        if (!need(n)) return malformed("enum");
        const uint64_t index = little_endian(p, n);
        p += n;
        if (index == 0) {
          text = "";  // the empty string MySQL stores for a value outside the list
        } else if (index <= c.labels.size()) {
          text = c.labels[index - 1];
        } else {
          return malformed(
              fmt::format("ENUM index {} of column {} beyond its {} labels", index, c.name, c.labels.size()));
        }
        break;
      }
      case MYSQL_TYPE_SET: {
        const size_t n = c.meta;
        if (n == 0 || n > 8 || !need(n)) return malformed("set");
        const uint64_t bits = little_endian(p, n);
        p += n;
        for (size_t b = 0; b < c.labels.size() && b < 64; ++b) {
          if ((bits >> b) & 1) text += (text.empty() ? "" : ",") + c.labels[b];
        }
        break;
      }
      case MYSQL_TYPE_BLOB:
      case MYSQL_TYPE_GEOMETRY: {
        const size_t prefix = c.meta;
        if (prefix == 0 || prefix > 4 || !need(prefix)) return malformed("blob length");
        const size_t n = little_endian(p, prefix);
        p += prefix;
        if (!need(n)) return malformed("blob");
        text.assign(reinterpret_cast<const char*>(p), n);
        p += n;
        // A geometry is stored as a 4-byte SRID then its WKB; a snapshot reads ST_AsBinary, the WKB alone.
        if (c.type == MYSQL_TYPE_GEOMETRY && text.size() >= 4) text.erase(0, 4);
        break;
      }
      default:
        return fail(ErrorKind::kBadInput,
                    fmt::format("column {} of {}.{} has binlog type {}, which skipprd cannot read yet (MySQL's "
                                "binary JSON and the pre-5.6 temporal formats among them)",
                                c.name, map.schema, map.table, static_cast<int>(c.type)));
    }
    values[i] = std::move(text);
  }
  return ok();
}

}  // namespace skippr
