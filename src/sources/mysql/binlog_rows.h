// The row images of the binlog's row events, decoded per the documented binlog format: a TABLE_MAP event describes a
// table's columns (their binary types and per-type metadata; with binlog_row_metadata=FULL also names, ENUM and SET
// labels), and each WRITE/UPDATE/DELETE row event holds images of rows in that layout. Values come out in the text
// forms of mysql_catalog.h, so a changed row reads the same as the snapshot's. The connector's own decoder
// (mariadb_rpl_extract_rows) is not used: it reads CHAR, ENUM, SET and TIMESTAMP(n) values wrongly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

struct st_mariadb_rpl_event;

namespace skippr {

struct BinlogColumn {
  uint8_t type = 0;                 // enum_field_types, with ENUM and SET told apart from CHAR
  uint16_t meta = 0;                // the type's metadata (length bytes, precision and scale, fraction digits, ...)
  std::string name;                 // from the optional metadata; empty when the server logs none
  std::vector<std::string> labels;  // ENUM / SET labels, in order
};

struct BinlogTableMap {
  uint64_t table_id = 0;
  std::string schema, table;
  std::vector<BinlogColumn> columns;
  bool has_names = false;  // binlog_row_metadata=FULL
};

// The connector's parse of a TABLE_MAP event, completed from its raw metadata block.
Result<BinlogTableMap> binlog_table_map(const st_mariadb_rpl_event& event);

// Decodes the row image at `p` (moving it past the image): `present` is the event's bitmap of the columns the image
// holds; `unsigned_columns` says which integer columns are unsigned (by index; from the catalog); `values` gets one
// entry per column of the map (nullopt for NULL or a column outside the image). kBadInput on a malformed image or a
// type the decoder does not know (named).
Status decode_row_image(const BinlogTableMap& map, const unsigned char* present,
                        const std::vector<bool>& unsigned_columns, const unsigned char*& p, const unsigned char* end,
                        std::vector<std::optional<std::string>>& values);

// The decimal text of a packed DECIMAL(precision, scale) value, as the server prints it ("-12.30", "0.50", "7").
Result<std::string> decode_packed_decimal(const unsigned char* p, int precision, int scale, size_t& size);

}  // namespace skippr
