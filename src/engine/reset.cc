#include "engine/reset.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/env.h"
#include "state/state_store.h"
#include "wal/wal.h"

namespace skippr {

Result<uint64_t> reset_state_then_wal(StateStore& store, const std::function<Status(uint64_t)>& destroy_wal) {
  auto state = store.load();
  if (!state) return std::unexpected(state.error());
  // A new lineage and a new epoch: the first keeps new BatchIds apart from every earlier one, the second keeps the
  // merge order tokens of new batches above the old ones'. Reading starts over: no resume position.
  state->epoch += 1;
  state->lineage = new_lineage();
  state->resume_position = {};
  state->resumed_after.clear();
  SKIPPR_TRY(store.save(*state));
  SKIPPR_TRY(destroy_wal(state->epoch));
  return state->epoch;
}

Result<uint64_t> reset_pipeline_files(const PipelinePaths& paths, Env* env) {
  auto store = local_state_store(paths, paths.root.filename().string(), env);
  return reset_state_then_wal(*store, [&](uint64_t) { return Wal::destroy(paths.wal, env); });
}

Status finish_interrupted_reset(const PipelinePaths& paths, uint64_t epoch, std::string_view pipeline, Env* env) {
  // Only the oldest segment's header is read: start-up stays fast with a large WAL waiting.
  auto on_disk = Wal::epoch_on_disk(paths.wal, env);
  if (!on_disk) return std::unexpected(on_disk.error());
  return finish_interrupted_reset(paths, epoch, *on_disk, pipeline, env);
}

Status finish_interrupted_reset(const PipelinePaths& paths, uint64_t epoch, std::optional<uint64_t> on_disk,
                                std::string_view pipeline, Env* env) {
  return finish_interrupted_reset_with(epoch, on_disk, pipeline, paths.wal.string(), paths.state.string(),
                                       [&] { return Wal::destroy(paths.wal, env); });
}

Status finish_interrupted_reset_with(uint64_t epoch, std::optional<uint64_t> on_disk, std::string_view pipeline,
                                     const std::string& wal_where, const std::string& state_where,
                                     const std::function<Status()>& destroy_wal) {
  if (!on_disk || *on_disk == epoch) return ok();
  if (*on_disk > epoch) {
    return fail(ErrorKind::kCorruption,
                fmt::format("the WAL in {} is from epoch {} but {} says epoch {}; nothing was changed. Restore "
                            "DATA_DIR from a backup or run RESET PIPELINE {}",
                            wal_where, *on_disk, state_where, epoch, pipeline));
  }
  spdlog::warn("finishing an interrupted RESET PIPELINE {}: removing the WAL of epoch {}", pipeline, *on_disk);
  return destroy_wal();
}

}  // namespace skippr
