// The file side of RESET PIPELINE, in the one order that is safe under a power cut: bump the epoch durably first,
// delete the WAL second. A WAL of an older epoch is therefore what an interrupted RESET left behind, and the next sync
// finishes deleting it, so old batches never land under the new epoch. Both go through an Env (the tests cut the
// power after every single operation of them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "state/pipeline_state.h"

namespace skippr {

class Env;
class StateStore;

// The order itself, for any store: a new epoch and lineage saved in `state`, then `destroy_wal(new epoch)`, which
// deletes what the WAL holds of the epochs before it. Returns the new epoch.
Result<uint64_t> reset_state_then_wal(StateStore& state, const std::function<Status(uint64_t)>& destroy_wal);
// Decides what a WAL of epoch `epoch_on_disk` means for a state at `epoch`: nothing (same, or none), deleted with
// `destroy_wal` (older: an interrupted RESET), or kCorruption naming both places (newer).
Status finish_interrupted_reset_with(uint64_t epoch, std::optional<uint64_t> epoch_on_disk, std::string_view pipeline,
                                     const std::string& wal_where, const std::string& state_where,
                                     const std::function<Status()>& destroy_wal);

// Returns the new epoch. The caller holds the pipeline lock.
Result<uint64_t> reset_pipeline_files(const PipelinePaths& paths, Env* env = nullptr);

// Deletes the WAL when it belongs to an epoch older than `epoch` (an interrupted RESET); a WAL from a newer epoch is
// kCorruption (the state file was replaced behind our back).
Status finish_interrupted_reset(const PipelinePaths& paths, uint64_t epoch, std::string_view pipeline,
                                Env* env = nullptr);
// The same for a caller that has read Wal::epoch_on_disk already (nullopt: no WAL).
Status finish_interrupted_reset(const PipelinePaths& paths, uint64_t epoch, std::optional<uint64_t> epoch_on_disk,
                                std::string_view pipeline, Env* env = nullptr);

}  // namespace skippr
