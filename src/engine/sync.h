// One run of one pipeline: the commit protocol of docs/design/commit-protocol.md, with the source reader, the WAL
// committer and the sink writer as three stages joined by bounded queues.
#pragma once

#include <atomic>
#include <string>

#include "config/config.h"
#include "engine/reporter.h"

namespace skippr {

class Env;

struct SyncOptions {
  std::string pipeline;
  bool once = false;
  // Set by SIGTERM / Ctrl-C: stop reading, land what is committed within the grace period, then return.
  const std::atomic<bool>* stop_requested = nullptr;
  double shutdown_grace_seconds = 10;
  // The WAL's I/O seam, for tests that inject disk faults into a whole run; nullptr = default_env().
  Env* wal_env = nullptr;
};

struct SyncResult {
  int exit_code = 0;
  // With --once: a stop request ended the run before the source was drained (what was committed has landed). The
  // exit code is then 130; the CLI reports 128 + the signal's number.
  bool interrupted = false;
  std::string message;  // one sentence for the user when exit_code != 0
  RunTotals totals;
};

// The error (kInternal, exit 1) that an exception escaping `where` becomes: it ends one run, never the process.
Error unexpected_exception(std::string_view where, std::string_view what);

SyncResult run_sync(const Config& config, const Settings& settings, const SyncOptions& options, Reporter& reporter);

}  // namespace skippr
