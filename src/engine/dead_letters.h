// The pipeline's dead-letter file (DATA_DIR/pipelines/<name>/deadletter.jsonl): one JSON line per record a source
// could not read, tagged with the epoch and seq of the batch it was read with.
//
// Exactly once under kill -9: the committer appends (and fsyncs) a batch's dead letters just BEFORE the WAL commit
// of that batch. If the process dies between the two, the lines carry a seq the WAL never committed; the source will
// read those records again from the committed position, so open() drops every line of the current epoch whose seq is
// greater than the WAL's last committed seq (and a torn last line) before anything new is written.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

#include "core/connector.h"
#include "core/result.h"

namespace skippr {

class DeadLetterFile {
 public:
  // Trims what uncommitted batches left behind (see above). Returns how many lines were dropped.
  static Result<DeadLetterFile> open(const std::filesystem::path& path, uint64_t epoch, uint64_t last_committed_seq,
                                     uint64_t* dropped = nullptr);

  // Appends one line per dead letter, tagged {epoch, seq}, and fdatasyncs. kFatalIo when the sync fails.
  Status append(uint64_t seq, const std::vector<DeadLetter>& letters);

  DeadLetterFile(DeadLetterFile&& other) noexcept;
  DeadLetterFile& operator=(DeadLetterFile&&) = delete;
  ~DeadLetterFile();

 private:
  DeadLetterFile(std::filesystem::path path, uint64_t epoch) : path_(std::move(path)), epoch_(epoch) {}
  std::filesystem::path path_;
  uint64_t epoch_ = 0;
  int fd_ = -1;  // opened on the first append
};

}  // namespace skippr
