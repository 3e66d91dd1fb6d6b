// An Env that forwards to the real file system but can be told to fail a sync or to run out of space mid-write.
#pragma once

#include <atomic>
#include <memory>

#include "core/env.h"

namespace skippr::testing {

class FaultEnv final : public Env {
 public:
  std::atomic<bool> fail_sync{false};
  std::atomic<bool> disk_full{false};  // the next appends write half their data, then report ENOSPC
  std::atomic<int> syncs{0};

  Result<std::unique_ptr<WritableFile>> open_writable(const std::filesystem::path& path, OpenMode mode) override {
    auto inner = base_.open_writable(path, mode);
    if (!inner) return std::unexpected(inner.error());
    return std::make_unique<File>(*this, std::move(*inner));
  }
  Result<std::string> read_range(const std::filesystem::path& p, uint64_t offset, uint64_t length) override {
    return base_.read_range(p, offset, length);
  }
  Result<std::string> read_file(const std::filesystem::path& p) override { return base_.read_file(p); }
  Result<std::vector<std::string>> list_dir(const std::filesystem::path& dir) override { return base_.list_dir(dir); }
  Result<bool> exists(const std::filesystem::path& p) override { return base_.exists(p); }
  Result<uint64_t> file_size(const std::filesystem::path& p) override { return base_.file_size(p); }
  Status rename(const std::filesystem::path& from, const std::filesystem::path& to) override {
    return base_.rename(from, to);
  }
  Status unlink(const std::filesystem::path& p) override { return base_.unlink(p); }
  Status fsync_dir(const std::filesystem::path& dir) override { return base_.fsync_dir(dir); }
  Status create_dirs(const std::filesystem::path& dir) override { return base_.create_dirs(dir); }

 private:
  class File final : public WritableFile {
   public:
    File(FaultEnv& env, std::unique_ptr<WritableFile> inner) : env_(env), inner_(std::move(inner)) {}
    Status append(std::string_view data) override {
      if (env_.disk_full) {
        (void)inner_->append(data.substr(0, data.size() / 2));
        return fail(ErrorKind::kDiskFull, "the disk is full: writing " + inner_->path().string());
      }
      return inner_->append(data);
    }
    Status write_at(uint64_t offset, std::string_view data) override { return inner_->write_at(offset, data); }
    Status sync() override {
      ++env_.syncs;
      if (env_.fail_sync) return fail(ErrorKind::kFatalIo, "fdatasync of " + inner_->path().string() + " failed: EIO");
      return inner_->sync();
    }
    Status truncate(uint64_t size) override { return inner_->truncate(size); }
    Status close() override { return inner_->close(); }
    uint64_t size() const override { return inner_->size(); }
    const std::filesystem::path& path() const override { return inner_->path(); }

   private:
    FaultEnv& env_;
    std::unique_ptr<WritableFile> inner_;
  };

  Env& base_ = default_env();
};

}  // namespace skippr::testing
