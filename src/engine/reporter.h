// What a run tells the user while it works: a live progress line on a terminal, JSON-lines events for machines, or
// plain text lines. The engine calls the same events whatever the output.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/batch.h"
#include "state/delivery_counts.h"

namespace skippr {

enum class OutputMode { kProgress, kJson, kText };

// This run's counters (added to the pipeline's stats as it goes), and what only a live run has.
struct RunTotals : DeliveryCounts {
  uint64_t wal_bytes = 0;
  uint64_t batches_waiting = 0;
  std::string last_batch_landed;  // the full BatchId of the last batch this run landed; empty when none
  double seconds = 0;
  // Replace landings only: the landing's name (empty otherwise), the syncs whose ending batch this run landed (each
  // replaced the table, or the partitions it read), and the rows this run landed in those syncs.
  std::string replace_landing;
  uint64_t syncs_replaced = 0;
  uint64_t rows_in_replaced_syncs = 0;
  double rows_per_second() const { return seconds > 0 ? rows_landed / seconds : 0; }
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void sync_start(const std::string& pipeline, uint64_t epoch, uint64_t pending_batches) = 0;
  virtual void batch_committed(const BatchId& id, uint64_t rows, const RunTotals& totals) = 0;
  // `source_lag_seconds`: from the source's commit of the batch's oldest record to this landing, when the source
  // told its time (a CDC source does).
  virtual void batch_landed(const BatchId& id, uint64_t rows, bool replayed, bool already_applied,
                            std::optional<double> source_lag_seconds, const RunTotals& totals) = 0;
  virtual void rows_read(const RunTotals& totals) = 0;
  virtual void sync_complete(const RunTotals& totals, int exit_code) = 0;
  virtual void error(const std::string& message) = 0;
};

// `out` is where events go; the progress line always goes to stderr.
std::unique_ptr<Reporter> make_reporter(OutputMode mode, std::FILE* out);

}  // namespace skippr
