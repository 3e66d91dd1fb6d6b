#include "support/mem_env.h"

#include <cerrno>

namespace skippr::testing {

namespace fs = std::filesystem;

namespace {
fs::path normal(const fs::path& p) { return p.lexically_normal(); }
bool is_root(const fs::path& p) { return p == p.root_path() || p.empty() || p == "."; }
}  // namespace

class MemEnv::File final : public WritableFile {
 public:
  File(MemEnv& env, fs::path path, std::shared_ptr<Inode> inode)
      : env_(env), path_(std::move(path)), inode_(std::move(inode)), generation_(env.generation_) {}

  Status append(std::string_view data) override {
    std::lock_guard lock(env_.mu_);
    SKIPPR_TRY(alive("writing"));
    inode_->data.append(data);
    return ok();
  }
  Status write_at(uint64_t offset, std::string_view data) override {
    std::lock_guard lock(env_.mu_);
    SKIPPR_TRY(alive("writing"));
    if (offset > inode_->data.size()) inode_->data.resize(offset);
    inode_->data.replace(offset, std::min<size_t>(data.size(), inode_->data.size() - offset), data);
    return ok();
  }
  Status sync() override {
    std::lock_guard lock(env_.mu_);
    SKIPPR_TRY(alive("fdatasync of"));
    inode_->durable = inode_->data;
    return ok();
  }
  Status truncate(uint64_t size) override {
    std::lock_guard lock(env_.mu_);
    SKIPPR_TRY(alive("truncating"));
    inode_->data.resize(size);
    return ok();
  }
  Status close() override {
    std::lock_guard lock(env_.mu_);
    closed_ = true;
    return ok();
  }
  uint64_t size() const override {
    std::lock_guard lock(env_.mu_);
    return inode_->data.size();
  }
  const fs::path& path() const override { return path_; }

 private:
  Status alive(std::string_view what) const {
    if (closed_ || generation_ != env_.generation_) return std::unexpected(io_error(what, path_, EBADF));
    return ok();
  }

  MemEnv& env_;
  fs::path path_;
  std::shared_ptr<Inode> inode_;
  uint64_t generation_;
  bool closed_ = false;
};

bool MemEnv::is_dir_locked(const fs::path& path) const {
  if (is_root(path)) return true;
  auto it = live_.find(path);
  return it != live_.end() && it->second.is_dir;
}

Result<std::shared_ptr<MemEnv::Inode>> MemEnv::file_locked(const fs::path& path) const {
  auto it = live_.find(path);
  if (it == live_.end()) return std::unexpected(io_error("opening", path, ENOENT));
  if (it->second.is_dir) return std::unexpected(io_error("opening", path, EISDIR));
  return it->second.inode;
}

void MemEnv::power_cut(Unsynced unsynced) {
  std::lock_guard lock(mu_);
  ++generation_;
  Tree survivors;
  for (const auto& [path, entry] : durable_) {
    // An entry survives only when every directory above it survives too.
    bool reachable = true;
    for (fs::path p = path.parent_path(); !is_root(p); p = p.parent_path()) {
      auto it = durable_.find(p);
      if (it == durable_.end() || !it->second.is_dir) {
        reachable = false;
        break;
      }
    }
    if (reachable) survivors.emplace(path, entry);
  }
  for (auto& [path, entry] : survivors) {
    if (entry.is_dir) continue;
    Inode& inode = *entry.inode;
    const bool appended_since_sync =
        inode.data.size() > inode.durable.size() && inode.data.compare(0, inode.durable.size(), inode.durable) == 0;
    if (unsynced == Unsynced::kHalfKept && appended_since_sync) {
      inode.durable = inode.data.substr(0, inode.durable.size() + (inode.data.size() - inode.durable.size()) / 2);
    }
    inode.data = inode.durable;
  }
  live_ = survivors;
  durable_ = std::move(survivors);
}

std::optional<std::string> MemEnv::content(const fs::path& path) {
  std::lock_guard lock(mu_);
  auto inode = file_locked(normal(path));
  if (!inode) return std::nullopt;
  return (*inode)->data;
}

Result<std::unique_ptr<WritableFile>> MemEnv::open_writable(const fs::path& raw, OpenMode mode) {
  const fs::path path = normal(raw);
  std::lock_guard lock(mu_);
  if (!is_dir_locked(path.parent_path())) return std::unexpected(io_error("opening", path, ENOENT));
  auto it = live_.find(path);
  if (it != live_.end() && it->second.is_dir) return std::unexpected(io_error("opening", path, EISDIR));
  std::shared_ptr<Inode> inode;
  switch (mode) {
    case OpenMode::kCreateExclusive:
      if (it != live_.end()) return std::unexpected(io_error("opening", path, EEXIST));
      inode = std::make_shared<Inode>();
      live_[path] = Entry{false, inode};
      break;
    case OpenMode::kCreateOrTruncate:
      if (it == live_.end()) {
        inode = std::make_shared<Inode>();
        live_[path] = Entry{false, inode};
      } else {
        inode = it->second.inode;
        inode->data.clear();
      }
      break;
    case OpenMode::kAppendExisting:
      if (it == live_.end()) return std::unexpected(io_error("opening", path, ENOENT));
      inode = it->second.inode;
      break;
  }
  return std::make_unique<File>(*this, path, std::move(inode));
}

Result<std::string> MemEnv::read_range(const fs::path& path, uint64_t offset, uint64_t length) {
  std::lock_guard lock(mu_);
  auto inode = file_locked(normal(path));
  if (!inode) return std::unexpected(inode.error());
  const std::string& data = (*inode)->data;
  if (offset >= data.size()) return std::string();
  return data.substr(offset, length);
}

Result<std::string> MemEnv::read_file(const fs::path& path) { return read_range(path, 0, UINT64_MAX); }

Result<std::vector<std::string>> MemEnv::list_dir(const fs::path& raw) {
  const fs::path dir = normal(raw);
  std::lock_guard lock(mu_);
  if (!is_dir_locked(dir)) return std::unexpected(io_error("listing", dir, ENOENT));
  std::vector<std::string> names;
  for (const auto& [path, entry] : live_) {
    if (path.parent_path() == dir) names.push_back(path.filename().string());
  }
  return names;
}

Result<bool> MemEnv::exists(const fs::path& path) {
  std::lock_guard lock(mu_);
  return is_root(normal(path)) || live_.count(normal(path)) > 0;
}

Result<uint64_t> MemEnv::file_size(const fs::path& path) {
  std::lock_guard lock(mu_);
  auto inode = file_locked(normal(path));
  if (!inode) return std::unexpected(inode.error());
  return (*inode)->data.size();
}

Status MemEnv::rename(const fs::path& raw_from, const fs::path& raw_to) {
  const fs::path from = normal(raw_from), to = normal(raw_to);
  std::lock_guard lock(mu_);
  auto it = live_.find(from);
  if (it == live_.end() || it->second.is_dir) return std::unexpected(io_error("renaming", from, ENOENT));
  if (!is_dir_locked(to.parent_path())) return std::unexpected(io_error("renaming", to, ENOENT));
  Entry entry = it->second;
  live_.erase(it);
  live_[to] = std::move(entry);
  return ok();
}

Status MemEnv::unlink(const fs::path& raw) {
  const fs::path path = normal(raw);
  std::lock_guard lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end() || it->second.is_dir) return std::unexpected(io_error("deleting", path, ENOENT));
  live_.erase(it);
  return ok();
}

Status MemEnv::fsync_dir(const fs::path& raw) {
  const fs::path dir = normal(raw);
  std::lock_guard lock(mu_);
  if (!is_dir_locked(dir)) return std::unexpected(io_error("opening directory", dir, ENOENT));
  std::erase_if(durable_, [&](const auto& kv) { return kv.first.parent_path() == dir; });
  for (const auto& [path, entry] : live_) {
    if (path.parent_path() == dir) durable_[path] = entry;
  }
  return ok();
}

Status MemEnv::create_dirs(const fs::path& raw) {
  const fs::path dir = normal(raw);
  {
    std::lock_guard lock(mu_);
    if (is_dir_locked(dir)) return ok();
    if (live_.count(dir)) return std::unexpected(io_error("creating directory", dir, EEXIST));
  }
  SKIPPR_TRY(create_dirs(dir.parent_path()));
  {
    std::lock_guard lock(mu_);
    live_[dir] = Entry{true, nullptr};
  }
  return fsync_dir(dir.parent_path());
}

Status MemEnv::remove_dir(const fs::path& raw) {
  const fs::path dir = normal(raw);
  std::lock_guard lock(mu_);
  if (!is_dir_locked(dir) || is_root(dir)) return std::unexpected(io_error("removing directory", dir, ENOENT));
  for (const auto& [path, entry] : live_) {
    if (path.parent_path() == dir) return std::unexpected(io_error("removing directory", dir, ENOTEMPTY));
  }
  live_.erase(dir);
  return ok();
}

}  // namespace skippr::testing
