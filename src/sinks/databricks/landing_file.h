// The landing file of a Databricks batch: uploaded beside the batch's files before any of its statements runs, it is
// the batch's commitment to the destination — whoever finds it (the WAL's retry, a run with a lost DATA_DIR) runs the
// same statements again, each a no-op where it already ran. It holds SQL that will be run with the sink's token, so it
// is signed (HMAC-SHA256 keyed by that token): a file anyone else put in the volume is refused, not run.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace skippr {

struct LandingFile {
  std::string batch_id;
  std::string landed_sql;  // one row when the ledger holds the batch
  std::vector<std::string> statements;
  std::vector<std::string> files;  // names in the folder, the landing file last
  uint64_t rejected = 0;           // rows the batch sends to the rejects table
  // A batch of several streams: the rows each part sends to its table's rejects table, in the batch's order (their
  // sum is `rejected`). Empty for a batch of one stream (and in every file written before streams).
  std::vector<uint64_t> rejected_by_part;
  // Not written to the file: the index of each part's first statement after the first part's (the landing this
  // process made), where a test stops it between tables (failpoint::kSinkBetweenTables).
  std::vector<size_t> part_starts;
};

std::string landing_file_json(const LandingFile& landing, std::string_view signing_key);
// kConfig naming `where` when `text` is not a landing file, or one not signed with `signing_key`.
Result<LandingFile> parse_landing_file(std::string_view text, std::string_view signing_key, std::string_view where);

}  // namespace skippr
