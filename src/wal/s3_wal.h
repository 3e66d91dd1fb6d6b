// WAL_STORAGE=s3: every batch is one object, written with If-None-Match: * at a key made of the pipeline, the epoch,
// the lineage, the seq and the writer's fencing token — never a random id, so a retry after an unknown outcome writes
// the same key and a reader can tell a committed object from a fenced writer's leftover. The batch is committed when
// the commit log (the state store) has moved its committed seq to it, conditionally on the writer's token; an object
// the log does not name is an orphan, deleted at the next open. Landed batches' objects are deleted.
//
// Key: <prefix><pipeline>/wal/<epoch, 20 digits>-<lineage>/<seq, 20 digits>-<token, 20 digits>.batch
// Body: the disk WAL's framing (wal/record_format.h): a SEGMENT_HEADER record, then one BATCH_BLOCKS record.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "clients/aws/aws_config.h"
#include "wal/wal.h"
#include "wal/wal_commit_log.h"

namespace skippr {

struct S3WalOptions {
  AwsService service;
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  std::string pipeline;
  uint64_t epoch = 0;
  std::string lineage;
  Position initial_position;  // where the source starts while nothing was committed in this epoch
  int zstd_level = 1;
  WalCommitLog* log = nullptr;  // the state store's record of what is committed
  uint64_t token = 0;           // this writer's fencing token (from its lease)
  double retry_seconds = 60;    // how long a PUT or a commit-log write that fails for a transient reason is retried
};

class S3Wal {
 public:
  // Reads the commit log and lists the objects: those of committed, unlanded batches become pending(); leftovers
  // (landed, never committed, a fenced writer's, an older epoch's after an interrupted RESET) are deleted.
  // kCorruption when a committed batch's object is missing or damaged, or objects of a newer epoch or of another
  // lineage of this epoch are there.
  static Result<std::unique_ptr<Wal>> open(const S3WalOptions& options);
  // What is there, changing nothing (SHOW PIPELINE, wal inspect). `token` is not used.
  static Result<WalInspection> inspect(const S3WalOptions& options);
  // The epoch of the oldest WAL object of the pipeline; nullopt when there is none.
  static Result<std::optional<uint64_t>> oldest_epoch(const S3WalOptions& options);
  // Deletes the pipeline's WAL objects of epochs before options.epoch (RESET PIPELINE, once the state moved to it).
  // Never those of the current epoch: a RESET that lost its lease meanwhile must not delete a new owner's batches.
  static Status destroy_before_epoch(const S3WalOptions& options);
  // s3://bucket/prefix/pipeline/wal/
  static std::string location(const S3WalOptions& options);
};

}  // namespace skippr
