// SKIPPR_STATE_STORE=local (the default): state.json, stats.json and the lock file in DATA_DIR.
#include <filesystem>

#include "core/env.h"
#include "state/state_store.h"

namespace skippr {
namespace {

class LocalLease final : public PipelineLease {
 public:
  explicit LocalLease(PipelineLock lock) : lock_(std::move(lock)) {}
  uint64_t token() const override { return 0; }
  Status check() override { return ok(); }  // an flock cannot be taken over while this process lives

 private:
  PipelineLock lock_;
};

class LocalStateStore final : public StateStore {
 public:
  LocalStateStore(PipelinePaths paths, std::string pipeline, Env* env)
      : paths_(std::move(paths)), pipeline_(std::move(pipeline)), env_(env) {}

  std::string where() const override { return paths_.root.string(); }
  Result<bool> known() override { return std::filesystem::exists(paths_.root); }
  Result<PipelineState> load() override { return load_state(paths_, env_); }
  Status save(const PipelineState& state) override {
    SKIPPR_TRY((env_ != nullptr ? *env_ : default_env()).create_dirs(paths_.root));  // private, like all of DATA_DIR
    return save_state(paths_, state, env_);
  }
  Status set_enabled(bool enabled) override {
    auto state = load();
    if (!state) return std::unexpected(state.error());
    state->enabled = enabled;
    return save(*state);
  }
  Result<std::unique_ptr<PipelineLease>> acquire() override {
    auto lock = PipelineLock::acquire(paths_, pipeline_);
    if (!lock) return std::unexpected(lock.error());
    return std::unique_ptr<PipelineLease>(new LocalLease(std::move(*lock)));
  }
  std::optional<std::string> holder() override { return PipelineLock::holder(paths_); }
  PipelineStats load_stats() override { return skippr::load_stats(paths_); }
  Status save_stats(const PipelineStats& stats) override { return skippr::save_stats(paths_, stats); }

 private:
  PipelinePaths paths_;
  std::string pipeline_;
  Env* env_;
};

}  // namespace

std::unique_ptr<StateStore> local_state_store(const PipelinePaths& paths, std::string pipeline, Env* env) {
  return std::make_unique<LocalStateStore>(paths, std::move(pipeline), env);
}

}  // namespace skippr
