// A pure decoder of pgoutput (protocol version 1) messages, the payload of each XLogData frame of a logical
// replication stream. No I/O: the stream hands it bytes, the CDC source turns the structs into rows. Unit-tested on
// hand-built buffers and on a real server's stream.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/result.h"

namespace skippr {

struct PgoValue {
  enum class Kind : char { kNull = 'n', kUnchangedToast = 'u', kText = 't' };
  Kind kind = Kind::kNull;
  std::string text;  // kText only: the type's output function's text, in the walsender session's settings
};
using PgoTuple = std::vector<PgoValue>;

struct PgoBegin {
  uint64_t final_lsn = 0;  // the LSN of the transaction's commit record
  int64_t commit_time = 0;
  uint32_t xid = 0;
};
struct PgoCommit {
  uint64_t commit_lsn = 0;
  uint64_t end_lsn = 0;  // the end of the commit record: what a status update confirms once the tx is safe
  int64_t commit_time = 0;
};
struct PgoRelationColumn {
  bool key = false;  // part of the replica identity
  std::string name;
  uint32_t type_oid = 0;
  int32_t type_mod = -1;
};
struct PgoRelation {
  uint32_t relid = 0;
  std::string schema;
  std::string name;
  char replica_identity = 'd';  // d default (primary key), n nothing, f full, i index
  std::vector<PgoRelationColumn> columns;
};
struct PgoInsert {
  uint32_t relid = 0;
  PgoTuple row;
};
struct PgoUpdate {
  uint32_t relid = 0;
  char old_kind = 0;  // 0 (no old tuple), 'K' (old key columns only) or 'O' (the whole old row)
  PgoTuple old_row;
  PgoTuple row;
};
struct PgoDelete {
  uint32_t relid = 0;
  char old_kind = 'K';  // 'K' or 'O'
  PgoTuple old_row;
};
struct PgoTruncate {
  std::vector<uint32_t> relids;
};
// Origin, Type and logical decoding messages: nothing the source acts on.
struct PgoOther {
  char tag = 0;
};

using PgoMessage =
    std::variant<PgoBegin, PgoCommit, PgoRelation, PgoInsert, PgoUpdate, PgoDelete, PgoTruncate, PgoOther>;

// Decodes one pgoutput message; kCorruption when the bytes do not follow the protocol (truncated, unknown tag).
Result<PgoMessage> decode_pgoutput(std::string_view bytes);

}  // namespace skippr
