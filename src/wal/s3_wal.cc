#include "wal/s3_wal.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "clients/aws/s3_client.h"
#include "core/failpoint.h"
#include "core/reset_advice.h"
#include "wal/batch_codec.h"
#include "wal/record_format.h"
#include "wal/segment.h"

namespace skippr {
namespace {

using Clock = std::chrono::steady_clock;

std::string pipeline_prefix(const S3WalOptions& o) { return fmt::format("{}{}/wal/", o.prefix, o.pipeline); }

std::string epoch_prefix(const S3WalOptions& o) {
  return fmt::format("{}{:020}-{}/", pipeline_prefix(o), o.epoch, o.lineage);
}

std::string batch_key(const S3WalOptions& o, uint64_t seq) {
  return fmt::format("{}{:020}-{:020}.batch", epoch_prefix(o), seq, o.token);
}

struct ParsedKey {
  uint64_t epoch = 0;
  std::string lineage;
  uint64_t seq = 0;
  uint64_t token = 0;
};

bool parse_number(std::string_view text, uint64_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "<epoch>-<lineage>/<seq>-<token>.batch", relative to the pipeline's prefix.
std::optional<ParsedKey> parse_key(std::string_view rest) {
  const size_t slash = rest.find('/');
  const size_t dash = rest.find('-');
  if (slash == std::string_view::npos || dash == std::string_view::npos || dash > slash) return std::nullopt;
  std::string_view file = rest.substr(slash + 1);
  if (!file.ends_with(".batch")) return std::nullopt;
  file.remove_suffix(6);
  const size_t file_dash = file.find('-');
  if (file_dash == std::string_view::npos) return std::nullopt;
  ParsedKey key;
  key.lineage = std::string(rest.substr(dash + 1, slash - dash - 1));
  if (!parse_number(rest.substr(0, dash), key.epoch) || !parse_number(file.substr(0, file_dash), key.seq) ||
      !parse_number(file.substr(file_dash + 1), key.token)) {
    return std::nullopt;
  }
  return key;
}

std::string object_url(const S3WalOptions& o, const std::string& key) {
  return fmt::format("s3://{}/{}", o.bucket, key);
}

Error corrupt(const S3WalOptions& o, const std::string& key, std::string_view what) {
  return Error{ErrorKind::kCorruption,
               fmt::format("WAL object {} of pipeline '{}': {}; nothing was changed. Restore the object from a backup "
                           "(or its bucket's versions), or {}",
                           object_url(o, key), o.pipeline, what, reset_advice(o.pipeline))};
}

struct DecodedObject {
  wal::SegmentHeader header;
  wal::BatchMeta meta;
  wal::RecordType type = wal::RecordType::kBatchBlocks;
  std::string_view columns;
  uint32_t crc = 0;
};

// Checks both records' checksums and that the object is the batch its key names.
Result<DecodedObject> decode_object(const S3WalOptions& o, const std::string& key, const ParsedKey& parsed,
                                    std::string_view body) {
  DecodedObject out;
  wal::Record header{};
  if (wal::decode_record(body, 0, header) != wal::DecodeStatus::kOk || header.type != wal::RecordType::kSegmentHeader) {
    return std::unexpected(corrupt(o, key, "its header record is damaged"));
  }
  auto decoded_header = wal::decode_segment_header(header.payload);
  wal::Record batch{};
  if (!decoded_header || wal::decode_record(body, header.total_bytes, batch) != wal::DecodeStatus::kOk ||
      !wal::is_batch_record(batch.type) || header.total_bytes + batch.total_bytes != body.size()) {
    return std::unexpected(corrupt(o, key, "its batch record is damaged or cut short"));
  }
  auto meta = wal::decode_batch_meta(batch.payload, &out.columns);
  if (!meta || meta->seq != parsed.seq || decoded_header->first_seq != parsed.seq ||
      decoded_header->epoch != parsed.epoch || decoded_header->lineage != parsed.lineage) {
    return std::unexpected(corrupt(o, key, "it holds another batch than its key names"));
  }
  meta->id.lineage = decoded_header->lineage;
  out.header = std::move(*decoded_header);
  out.meta = std::move(*meta);
  out.type = batch.type;
  out.crc = batch.crc;
  return out;
}

class S3WalImpl final : public Wal {
 public:
  S3WalImpl(S3WalOptions options, S3Client client) : o_(std::move(options)), s3_(std::move(client)) {}

  Status recover() {
    auto point = read_point();
    if (!point) return std::unexpected(point.error());
    auto listed = list_with_retry();
    if (!listed) return std::unexpected(listed.error());
    std::map<uint64_t, std::pair<std::string, uint64_t>> committed_objects;  // seq -> key, size
    std::vector<std::pair<std::string, std::string>> leftovers;              // key, why it goes
    const std::string root = pipeline_prefix(o_);
    for (const S3Object& object : *listed) {
      auto parsed = parse_key(std::string_view(object.key).substr(root.size()));
      if (!parsed) {
        spdlog::warn("WAL: ignoring {}, which is not a WAL object name", object_url(o_, object.key));
        continue;
      }
      if (parsed->epoch > o_.epoch || (parsed->epoch == o_.epoch && parsed->lineage != o_.lineage)) {
        return fail(ErrorKind::kCorruption,
                    fmt::format("the WAL of pipeline '{}' holds {} (epoch {}, lineage {}) but the state store says "
                                "epoch {}, lineage {}: they do not belong together; nothing was changed. Point "
                                "SKIPPR_WAL_S3_PREFIX and the state table at the same pipeline, or {}",
                                o_.pipeline, object_url(o_, object.key), parsed->epoch, parsed->lineage, o_.epoch,
                                o_.lineage, reset_advice(o_.pipeline)));
      }
      std::string why;
      if (parsed->epoch < o_.epoch) {
        why = "it belongs to an epoch before the last RESET";
      } else if (parsed->seq <= point->landed_seq) {
        why = "its batch has landed";
      } else if (parsed->seq > point->committed_seq) {
        if (parsed->token >= o_.token) {
          return fail(ErrorKind::kFenced, fmt::format("another process took pipeline '{}' over (it wrote {})",
                                                      o_.pipeline, object_url(o_, object.key)));
        }
        why = "it was never committed (written before a crash or by a process whose lease was taken over)";
      } else if (parsed->token != point->token_of(parsed->seq)) {
        why = "a writer whose lease was taken over left it; another object of that seq is the committed one";
      } else {
        committed_objects[parsed->seq] = {object.key, object.size};
        continue;
      }
      leftovers.emplace_back(object.key, std::move(why));
    }
    // Every committed batch's object must be there before anything is deleted: a record that does not match the
    // objects (a damaged item, another pipeline's prefix) changes nothing.
    for (uint64_t seq = point->landed_seq + 1; seq <= point->committed_seq; ++seq) {
      if (!committed_objects.count(seq)) return std::unexpected(missing_object(seq, ""));
    }
    for (const auto& [key, why] : leftovers) {
      spdlog::info("WAL: deleting {}: {}", object_url(o_, key), why);
      SKIPPR_TRY(delete_with_retry(key));
    }
    for (uint64_t seq = point->landed_seq + 1; seq <= point->committed_seq; ++seq) {
      auto found = committed_objects.find(seq);
      auto body = get_with_retry(found->second.first);
      if (!body) return std::unexpected(body.error());
      if (!*body) return std::unexpected(missing_object(seq, found->second.first));
      auto decoded = decode_object(o_, found->second.first, {o_.epoch, o_.lineage, seq, point->token_of(seq)}, **body);
      if (!decoded) return std::unexpected(decoded.error());
      unlanded_.push_back(WalBatchInfo{.seq = seq,
                                       .id = decoded->meta.id,
                                       .position_after = decoded->meta.position_after,
                                       .rows = decoded->meta.rows,
                                       .segment = found->second.first,
                                       .offset = 0,
                                       .record_bytes = (*body)->size(),
                                       .crc = decoded->crc,
                                       .landed = false});
    }
    next_seq_ = point->committed_seq + 1;
    watermark_ = point->landed_seq;
    last_position_ = point->committed_seq > 0 ? point->position : o_.initial_position;
    writers_ = point->writers;
    return ok();
  }

  Result<EncodedBatch> encode_parts(std::span<const Batch> parts) const override {
    return encode_for_wal(parts, o_.zstd_level);
  }

  using Wal::commit;
  Result<BatchId> commit(const EncodedBatch& batch, const Position& position_after) override {
    std::lock_guard commit_lock(commit_mu_);
    uint64_t seq;
    Position before;
    uint64_t landed;
    {
      std::lock_guard lock(mu_);
      seq = next_seq_;
      before = last_position_;
      landed = watermark_;
    }
    const BatchId id{o_.pipeline, o_.epoch, seq, o_.lineage};
    const std::string meta = wal::encode_batch_meta({seq, id, position_after, batch.rows});
    std::string body = wal::encode_record(wal::RecordType::kSegmentHeader,
                                          wal::encode_segment_header({o_.epoch, seq, landed, before, o_.lineage}));
    const std::string front =
        wal::encode_record_front(wal::RecordType::kBatchBlocks, meta, batch.columns.size(), batch.columns_crc);
    body.reserve(body.size() + front.size() + batch.columns.size());
    body += front;
    body += batch.columns;
    constexpr uint64_t kLargestPut = 5ull << 30;  // S3's limit for one PutObject
    if (body.size() > kLargestPut) {
      return fail(ErrorKind::kBadInput, fmt::format("a batch of {} encoded bytes is more than one S3 PUT carries (5 "
                                                    "GiB); lower BUFFER_THRESHOLD_BYTES",
                                                    body.size()));
    }
    const std::string key = batch_key(o_, seq);
    SKIPPR_TRY(put_reconciled(key, body));

    // The object is durable but not yet committed: a crash here leaves an orphan, which the next open deletes.
    failpoint::hit(failpoint::kWalBeforeFsync);
    std::vector<WalWriterRange> writers;  // who committed what, without the ranges that lie wholly in the landed past
    for (size_t i = 0; i < writers_.size(); ++i) {
      if (i + 1 < writers_.size() && writers_[i + 1].first_seq <= landed + 1) continue;
      writers.push_back(writers_[i]);
    }
    if (writers.empty() || writers.back().token != o_.token) writers.push_back({seq, o_.token});
    SKIPPR_TRY(
        retrying("commit to the state store", [&] { return o_.log->commit(seq, position_after, writers, o_.token); }));
    failpoint::hit(failpoint::kWalAfterFsync);

    uint32_t crc = 0;  // the batch record's checksum, as read_batch will find it
    for (int i = 3; i >= 0; --i) crc = (crc << 8) | static_cast<uint8_t>(front[4 + static_cast<size_t>(i)]);
    std::lock_guard lock(mu_);
    writers_ = std::move(writers);
    next_seq_ = seq + 1;
    last_position_ = position_after;
    unlanded_.push_back(WalBatchInfo{.seq = seq,
                                     .id = id,
                                     .position_after = position_after,
                                     .rows = batch.rows,
                                     .segment = key,
                                     .offset = 0,
                                     .record_bytes = body.size(),
                                     .crc = crc,
                                     .landed = false});
    return id;
  }

  Status mark_landed(uint64_t seq) override {
    std::vector<std::string> done;
    {
      std::lock_guard lock(mu_);
      if (seq >= next_seq_) {
        return fail(ErrorKind::kInternal,
                    fmt::format("mark_landed({}) but the last committed batch is {}", seq, next_seq_ - 1));
      }
      if (seq <= watermark_) return ok();
    }
    SKIPPR_TRY(retrying("landed mark in the state store", [&] { return o_.log->mark_landed(seq, o_.token); }));
    {
      std::lock_guard lock(mu_);
      watermark_ = std::max(watermark_, seq);
      while (!unlanded_.empty() && unlanded_.front().seq <= seq) {
        done.push_back(unlanded_.front().segment);
        unlanded_.pop_front();
      }
    }
    for (const std::string& key : done) {
      failpoint::hit(failpoint::kWalSegmentDelete);
      // A delete that fails leaves a landed batch's object, which the next open deletes: not worth failing for.
      if (auto deleted = s3_.delete_object(o_.bucket, key); !deleted) {
        spdlog::warn("WAL: could not delete {} (deleted at the next start): {}", object_url(o_, key),
                     deleted.error().message);
      }
    }
    return ok();
  }

  Status sync() override { return ok(); }  // every commit is durable when it returns

  std::vector<WalBatchInfo> pending() const override {
    std::lock_guard lock(mu_);
    return {unlanded_.begin(), unlanded_.end()};
  }

  Result<std::vector<Batch>> read_parts(const WalBatchInfo& info) const override {
    auto found = get_with_retry(info.segment);
    if (!found) return std::unexpected(found.error());
    if (!*found) return std::unexpected(missing_object(info.seq, info.segment));
    const std::string& body = **found;
    auto parsed = parse_key(std::string_view(info.segment).substr(pipeline_prefix(o_).size()));
    if (!parsed) return std::unexpected(corrupt(o_, info.segment, "not a WAL object name"));
    auto decoded = decode_object(o_, info.segment, *parsed, body);
    if (!decoded) return std::unexpected(decoded.error());
    if (decoded->crc != info.crc) return std::unexpected(corrupt(o_, info.segment, "it is not the batch committed"));
    auto parts = decode_wal_parts(static_cast<uint8_t>(decoded->type), decoded->columns);
    if (!parts) return std::unexpected(corrupt(o_, info.segment, parts.error().message));
    return parts;
  }

  Position last_position() const override {
    std::lock_guard lock(mu_);
    return last_position_;
  }
  uint64_t last_committed_seq() const override { return next_seq() - 1; }
  uint64_t next_seq() const override {
    std::lock_guard lock(mu_);
    return next_seq_;
  }
  uint64_t landed_watermark() const override {
    std::lock_guard lock(mu_);
    return watermark_;
  }
  uint64_t bytes_on_disk() const override {
    std::lock_guard lock(mu_);
    uint64_t total = 0;
    for (const WalBatchInfo& info : unlanded_) total += info.record_bytes;
    return total;
  }
  std::string location() const override { return S3Wal::location(o_); }

  // A committed, unlanded batch whose object is not there: the new owner of a pipeline taken over from this process
  // landed and deleted it (kFenced, exit 75), or it is really gone (kCorruption).
  Error missing_object(uint64_t seq, const std::string& key) const {
    auto point = o_.log->read();
    if (point && point->lease_token != o_.token && o_.token != 0) {
      return Error{ErrorKind::kFenced, fmt::format("pipeline '{}' was taken over by another process (batch {} "
                                                   "has landed there); this process stops",
                                                   o_.pipeline, seq)};
    }
    return Error{ErrorKind::kCorruption,
                 fmt::format("batch {} of pipeline '{}' is committed (the state store says so) but its object {}is "
                             "not under {}; nothing was changed. Restore it from the bucket's versions, or {}",
                             seq, o_.pipeline, key.empty() ? "" : object_url(o_, key) + " ", location(),
                             reset_advice(o_.pipeline))};
  }

  Result<WalCommitPoint> read_point() {
    Result<WalCommitPoint> point = fail(ErrorKind::kInternal, "not read");
    SKIPPR_TRY(retrying("read of the state store", [&]() -> Status {
      point = o_.log->read();
      if (!point) return std::unexpected(point.error());
      return ok();
    }));
    return point;
  }

  Result<std::vector<S3Object>> list_with_retry() {
    Result<std::vector<S3Object>> listed = fail(ErrorKind::kInternal, "not listed");
    SKIPPR_TRY(retrying("listing", [&]() -> Status {
      listed = s3_.list_objects(o_.bucket, pipeline_prefix(o_));
      if (!listed) return std::unexpected(listed.error());
      return ok();
    }));
    return listed;
  }

  // nullopt when the object is not there (landed and deleted since it was listed).
  Result<std::optional<std::string>> get_with_retry(const std::string& key) const {
    Result<std::optional<std::string>> body = fail(ErrorKind::kInternal, "not read");
    SKIPPR_TRY(retrying("read of " + object_url(o_, key), [&]() -> Status {
      body = s3_.get_object_if_exists(o_.bucket, key);
      if (!body) return std::unexpected(body.error());
      return ok();
    }));
    return body;
  }

  Status delete_with_retry(const std::string& key) {
    return retrying("delete of " + object_url(o_, key), [&] { return s3_.delete_object(o_.bucket, key); });
  }

 private:
  // PUT with If-None-Match: * at the batch's one key, retried at that key whatever happened. 412 means an object is
  // there already: one of this writer's earlier attempts (whose answer was lost) if its bytes are these, which is
  // success; anything else under this writer's token is a bug, never papered over by writing elsewhere.
  Status put_reconciled(const std::string& key, const std::string& body) {
    return retrying("PUT of " + object_url(o_, key), [&]() -> Status {
      auto put = s3_.put_object_if_absent(o_.bucket, key, body, "application/octet-stream");
      if (!put) return std::unexpected(put.error());
      if (*put == PutOutcome::kCreated) return ok();
      auto there = s3_.get_object_if_exists(o_.bucket, key);
      if (!there) return std::unexpected(there.error());
      if (!*there) return fail(ErrorKind::kUnavailable, object_url(o_, key) + " went away after a 412; PUT again");
      if (**there == body) return ok();  // an earlier attempt of this very commit succeeded
      return fail(ErrorKind::kInternal,
                  fmt::format("{} exists with other content than this writer's batch {}", object_url(o_, key), key));
    });
  }

  // Runs `step` until it succeeds, or fails for a reason waiting cannot fix, or retry_seconds pass; transient
  // failures (kUnavailable, kUnknownOutcome) are retried with backoff. Every step is idempotent: the same key, the
  // same conditional write.
  template <class Step>
  Status retrying(const std::string& what, Step step) const {
    const auto started = Clock::now();
    auto backoff = std::chrono::milliseconds(50);
    for (int attempt = 1;; ++attempt) {
      Status st = step();
      if (st) return st;
      const ErrorKind kind = st.error().kind;
      const bool transient = kind == ErrorKind::kUnavailable || kind == ErrorKind::kUnknownOutcome;
      if (!transient || Clock::now() - started > std::chrono::duration<double>(o_.retry_seconds)) return st;
      if (attempt == 1) spdlog::warn("WAL: {} failed, retrying: {}", what, st.error().message);
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
    }
  }

  S3WalOptions o_;
  mutable S3Client s3_;
  std::mutex commit_mu_;  // one commit at a time: seqs are committed in order, each with its own conditional write
  mutable std::mutex mu_;
  std::deque<WalBatchInfo> unlanded_;
  std::vector<WalWriterRange> writers_;
  uint64_t next_seq_ = 1;
  uint64_t watermark_ = 0;
  Position last_position_;
};

}  // namespace

std::string S3Wal::location(const S3WalOptions& options) {
  return fmt::format("s3://{}/{}", options.bucket, pipeline_prefix(options));
}

Result<std::unique_ptr<Wal>> S3Wal::open(const S3WalOptions& options) {
  if (options.log == nullptr) return fail(ErrorKind::kInternal, "S3Wal::open without a commit log");
  auto wal = std::make_unique<S3WalImpl>(options, S3Client(options.service));
  SKIPPR_TRY(wal->recover());
  return std::unique_ptr<Wal>(std::move(wal));
}

Result<WalInspection> S3Wal::inspect(const S3WalOptions& options) {
  if (options.log == nullptr) return fail(ErrorKind::kInternal, "S3Wal::inspect without a commit log");
  S3WalImpl reader(options, S3Client(options.service));
  auto point = reader.read_point();
  if (!point) return std::unexpected(point.error());
  auto listed = reader.list_with_retry();
  if (!listed) return std::unexpected(listed.error());
  WalInspection out;
  out.epoch = options.epoch;
  out.lineage = options.lineage;
  out.landed_watermark = point->landed_seq;
  out.last_committed_seq = point->committed_seq;
  out.last_position = point->committed_seq > 0 ? point->position : options.initial_position;
  const std::string root = pipeline_prefix(options);
  for (const S3Object& object : *listed) {
    auto parsed = parse_key(std::string_view(object.key).substr(root.size()));
    // Only what the commit log names is part of the WAL; leftovers are deleted by the next sync.
    if (!parsed || parsed->epoch != options.epoch || parsed->lineage != options.lineage ||
        parsed->seq > point->committed_seq || parsed->token != point->token_of(parsed->seq)) {
      continue;
    }
    auto body = reader.get_with_retry(object.key);
    if (!body) return std::unexpected(body.error());
    if (!*body) continue;  // landed and deleted by a running sync since the listing
    auto decoded = decode_object(options, object.key, *parsed, **body);
    if (!decoded) return std::unexpected(decoded.error());
    out.segments.push_back({object.key, parsed->seq, object.size, 1});
    out.batches.push_back(WalBatchInfo{.seq = parsed->seq,
                                       .id = decoded->meta.id,
                                       .position_after = decoded->meta.position_after,
                                       .rows = decoded->meta.rows,
                                       .segment = object.key,
                                       .offset = 0,
                                       .record_bytes = object.size,
                                       .crc = decoded->crc,
                                       .landed = parsed->seq <= point->landed_seq});
    out.bytes += object.size;
  }
  return out;
}

Result<std::optional<uint64_t>> S3Wal::oldest_epoch(const S3WalOptions& options) {
  S3Client s3(options.service);
  auto listed = s3.list_objects(options.bucket, pipeline_prefix(options));
  if (!listed) return std::unexpected(listed.error());
  std::optional<uint64_t> oldest;
  for (const S3Object& object : *listed) {
    auto parsed = parse_key(std::string_view(object.key).substr(pipeline_prefix(options).size()));
    if (parsed && (!oldest || parsed->epoch < *oldest)) oldest = parsed->epoch;
  }
  return oldest;
}

Status S3Wal::destroy_before_epoch(const S3WalOptions& options) {
  S3Client s3(options.service);
  auto listed = s3.list_objects(options.bucket, pipeline_prefix(options));
  if (!listed) return std::unexpected(listed.error());
  for (const S3Object& object : *listed) {
    auto parsed = parse_key(std::string_view(object.key).substr(pipeline_prefix(options).size()));
    if (parsed && parsed->epoch < options.epoch) SKIPPR_TRY(s3.delete_object(options.bucket, object.key));
  }
  return ok();
}

}  // namespace skippr
