#include "support/fault_env.h"

#include <cerrno>
#include <chrono>
#include <thread>

namespace skippr::testing {

namespace fs = std::filesystem;

const char* to_string(Op op) {
  switch (op) {
    case Op::kOpen:
      return "open";
    case Op::kAppend:
      return "append";
    case Op::kWriteAt:
      return "write_at";
    case Op::kSync:
      return "sync";
    case Op::kTruncate:
      return "truncate";
    case Op::kClose:
      return "close";
    case Op::kRename:
      return "rename";
    case Op::kUnlink:
      return "unlink";
    case Op::kFsyncDir:
      return "fsync_dir";
    case Op::kCreateDirs:
      return "create_dirs";
    case Op::kRemoveDir:
      return "remove_dir";
  }
  return "?";
}

class FaultEnv::File final : public WritableFile {
 public:
  File(FaultEnv& env, std::unique_ptr<WritableFile> inner) : env_(env), inner_(std::move(inner)) {}

  Status append(std::string_view data) override {
    size_t torn = 0;
    if (auto err = env_.before(Op::kAppend, path(), &torn)) {
      if (torn > 0 && !env_.powered_off()) (void)inner_->append(data.substr(0, std::min(torn, data.size())));
      return env_.injected_error(Op::kAppend, path(), *err);
    }
    return counted(inner_->append(data));
  }
  Status write_at(uint64_t offset, std::string_view data) override {
    if (auto err = env_.before(Op::kWriteAt, path())) return env_.injected_error(Op::kWriteAt, path(), *err);
    return counted(inner_->write_at(offset, data));
  }
  Status sync() override {
    ++env_.syncs_;
    if (sync_failed_) ++env_.syncs_after_failed_sync_;
    if (auto err = env_.before(Op::kSync, path())) {
      sync_failed_ = true;
      return env_.injected_error(Op::kSync, path(), *err);
    }
    if (const int ms = env_.sync_latency_ms; ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    auto synced = inner_->sync();
    if (!synced) sync_failed_ = true;
    return counted(std::move(synced));
  }
  Status truncate(uint64_t size) override {
    if (auto err = env_.before(Op::kTruncate, path())) return env_.injected_error(Op::kTruncate, path(), *err);
    return counted(inner_->truncate(size));
  }
  Status close() override {
    if (auto err = env_.before(Op::kClose, path())) return env_.injected_error(Op::kClose, path(), *err);
    return counted(inner_->close());
  }
  uint64_t size() const override { return inner_->size(); }
  const fs::path& path() const override { return inner_->path(); }

 private:
  Status counted(Status st) {
    env_.after_mutation();
    return st;
  }

  FaultEnv& env_;
  std::unique_ptr<WritableFile> inner_;
  std::atomic<bool> sync_failed_{false};
};

void FaultEnv::set_fault(Fault fault) {
  std::lock_guard lock(mu_);
  fault_ = std::move(fault);
}

void FaultEnv::clear_fault() {
  std::lock_guard lock(mu_);
  fault_.reset();
}

void FaultEnv::power_off_after(uint64_t n) {
  std::lock_guard lock(mu_);
  power_off_after_ = mutating_calls_ + n;
}

void FaultEnv::power_on() {
  std::lock_guard lock(mu_);
  power_off_after_.reset();
  fault_.reset();
  powered_off_ = false;
}

std::optional<int> FaultEnv::before(Op op, const fs::path& path, size_t* torn_bytes) {
  std::lock_guard lock(mu_);
  if (powered_off_) return EIO;
  if (!fault_ || fault_->op != op || path.string().find(fault_->path_part) == std::string::npos) return std::nullopt;
  if (fault_->skip > 0) {
    --fault_->skip;
    return std::nullopt;
  }
  const int err = fault_->err;
  if (torn_bytes != nullptr) *torn_bytes = fault_->torn_bytes;
  if (!fault_->sticky) fault_.reset();
  ++injected_;
  return err;
}

void FaultEnv::after_mutation() {
  std::lock_guard lock(mu_);
  ++mutating_calls_;
  if (power_off_after_ && mutating_calls_ >= *power_off_after_) powered_off_ = true;
}

Status FaultEnv::injected_error(Op op, const fs::path& path, int err) {
  // Worded as PosixEnv words the same failure, so messages can be checked as a user would see them.
  switch (op) {
    case Op::kSync:
      return std::unexpected(sync_error("fdatasync of", path, err));
    case Op::kFsyncDir:
      return std::unexpected(sync_error("fsync of directory", path, err));
    case Op::kClose:
      return std::unexpected(sync_error("closing", path, err));
    case Op::kAppend:
    case Op::kWriteAt:
      return std::unexpected(io_error("writing", path, err));
    default:
      return std::unexpected(io_error(std::string(to_string(op)) + " of", path, err));
  }
}

Result<std::unique_ptr<WritableFile>> FaultEnv::open_writable(const fs::path& path, OpenMode mode) {
  if (auto err = before(Op::kOpen, path)) return std::unexpected(io_error("opening", path, *err));
  auto inner = base_.open_writable(path, mode);
  after_mutation();
  if (!inner) return std::unexpected(inner.error());
  return std::make_unique<File>(*this, std::move(*inner));
}

// Reads change nothing, so they are neither counted nor faulted, except that a process without power reads nothing.
Result<std::string> FaultEnv::read_range(const fs::path& path, uint64_t offset, uint64_t length) {
  if (powered_off_) return std::unexpected(io_error("reading", path, EIO));
  auto data = base_.read_range(path, offset, length);
  if (data) bytes_read_ += data->size();
  return data;
}
Result<std::string> FaultEnv::read_file(const fs::path& path) {
  if (powered_off_) return std::unexpected(io_error("reading", path, EIO));
  auto data = base_.read_file(path);
  if (data) bytes_read_ += data->size();
  return data;
}
Result<std::vector<std::string>> FaultEnv::list_dir(const fs::path& dir) {
  if (powered_off_) return std::unexpected(io_error("listing", dir, EIO));
  return base_.list_dir(dir);
}
Result<bool> FaultEnv::exists(const fs::path& path) {
  if (powered_off_) return std::unexpected(io_error("stat of", path, EIO));
  return base_.exists(path);
}
Result<uint64_t> FaultEnv::file_size(const fs::path& path) {
  if (powered_off_) return std::unexpected(io_error("stat of", path, EIO));
  return base_.file_size(path);
}

#define SKIPPR_FAULT_FORWARD(OP, PATH, CALL)                                \
  do {                                                                      \
    if (auto err = before(OP, PATH)) return injected_error(OP, PATH, *err); \
    Status st = CALL;                                                       \
    after_mutation();                                                       \
    return st;                                                              \
  } while (0)

Status FaultEnv::rename(const fs::path& from, const fs::path& to) {
  SKIPPR_FAULT_FORWARD(Op::kRename, from, base_.rename(from, to));
}
Status FaultEnv::unlink(const fs::path& path) { SKIPPR_FAULT_FORWARD(Op::kUnlink, path, base_.unlink(path)); }
Status FaultEnv::fsync_dir(const fs::path& dir) { SKIPPR_FAULT_FORWARD(Op::kFsyncDir, dir, base_.fsync_dir(dir)); }
Status FaultEnv::create_dirs(const fs::path& dir) {
  SKIPPR_FAULT_FORWARD(Op::kCreateDirs, dir, base_.create_dirs(dir));
}
Status FaultEnv::remove_dir(const fs::path& dir) { SKIPPR_FAULT_FORWARD(Op::kRemoveDir, dir, base_.remove_dir(dir)); }

}  // namespace skippr::testing
