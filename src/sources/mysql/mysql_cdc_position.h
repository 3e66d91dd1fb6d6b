// Where a MySQL CDC read resumes. Snapshot phase: the binlog position the snapshot corresponds to and each table's
// last key read. Stream phase: the binlog file and offset where the first transaction not yet delivered whole starts,
// and how many of its changes are delivered (a transaction too large for one batch is split). The source skips what
// the position covers, so whatever the server sends again is harmless.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

struct MyTableProgress {
  bool done = true;                // its snapshot is read (or it has none: cdc_only)
  std::vector<std::string> after;  // while not done: the key values of the last row read, as text
};

struct MyCdcPosition {
  bool snapshot = false;
  std::string file;     // snapshot phase: the snapshot's binlog file; stream phase: the resume file
  uint64_t offset = 0;  // ... and offset (a transaction's start)
  uint64_t index = 0;   // stream phase: changes of the transaction at offset already delivered
  // MariaDB: the GTID position the file and offset correspond to, as gtid_binlog_pos writes it (the last GTID per
  // replication domain, domain-server-sequence, comma-separated); kept beside the file and offset, which are what a
  // run resumes from.
  std::string gtid;
  std::map<std::string, MyTableProgress> tables;  // by stream name ("" for a one-table source)

  Position to_position() const;
  // kCorruption for a token this source did not write.
  static Result<MyCdcPosition> parse(const Position& position);
};

// `set` (a GTID position as above) with `gtid` (domain-server-sequence) as its domain's last transaction.
std::string gtid_position_with(const std::string& set, const std::string& gtid);

// The number a binlog file name ends with (mysql-bin.000042 -> 42).
uint64_t binlog_file_number(std::string_view file);
// The position part of an order token: file number and offset in one growing number.
inline uint64_t binlog_order_position(std::string_view file, uint64_t offset) {
  return (binlog_file_number(file) << 32) | (offset & 0xffffffffULL);
}

}  // namespace skippr
