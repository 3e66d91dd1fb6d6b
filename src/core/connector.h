// The two interfaces every connector implements, and the description each one registers (its YAML type name, its
// parameters, its guarantee). Config validation, `skipprd connectors` and the Python classes all read the same
// description, so a connector is declared once.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/result.h"

namespace skippr {

// How much a poll may return at most.
struct Budget {
  size_t max_rows = 65536;
  size_t max_bytes = 10 << 20;    // what the batch being built has room for (it shrinks as the batch fills)
  size_t batch_bytes = 10 << 20;  // the whole batch's threshold (BUFFER_THRESHOLD_BYTES)
};

// A record the source could not read: it goes to the pipeline's dead-letter file, committed with the batch it was
// read with, so it is written exactly once however often the process is killed.
struct DeadLetter {
  std::string file;    // where it came from (a file path, a topic/partition, ...)
  uint64_t line = 0;   // 1-based line (or record) number there; 0 when not applicable
  std::string reason;  // what is wrong with it
  std::string raw;     // the record as read
  // The stream the record was of, for a source of several; "" for the poll's own (Poll::records.stream).
  std::string stream = {};
};

// The unit a source counts what it still has to read in, declared by its spec (ConnectorSpec::backlog): a Kafka
// consumer's lag (messages between the read position and each partition's high watermark), the files a File source
// has listed and not read to their end, the bytes of WAL a CDC slot has past the position read. Each unit is a gauge
// of its own (skippr_source_<name>_waiting, serve/metrics.cc), so a new source adds a unit without touching serve.
struct BacklogUnit {
  std::string name;    // "messages", "wal_bytes": a part of a Prometheus name ([a-z_]), and /api/status's unit
  std::string help;    // the gauge's HELP text
  std::string noun;    // the status page's "<amount> <noun> waiting": "files", "of WAL"
  bool bytes = false;  // amounts are bytes: the status page shows them in KiB / MiB
};

// What a run's latest poll said is waiting, in its source's unit (which lives as long as the registry).
struct SourceBacklog {
  const BacklogUnit* unit = nullptr;
  uint64_t amount = 0;
};

struct Poll {
  Batch records;  // may be empty; its `stream` names the stream the rows belong to (empty: the only one)
  // A source of several streams: the records of other streams read in the same poll (a CDC transaction that touched
  // several tables), one Batch each. They are committed in the same WAL batch as `records`.
  std::vector<Batch> other_streams;
  std::vector<DeadLetter> dead_letters;  // records read since the last poll that could not be used
  Position position_after;               // where to resume once `records` are committed
  bool drained = false;                  // nothing more to read right now
  // Commit position_after even when no record came with it: the source fixed where it starts (Kafka's `latest`
  // pinned to the partitions' ends), and a run that reads nothing must still keep that, or the next run starts at a
  // later "latest" and what was produced in between is never read.
  bool keep_position = false;
  // When the source knows it: the commit time, at the source, of the oldest record in `records` (UTC microseconds
  // since the Unix epoch; a CDC source's transaction commit). The engine reports each landed batch's source lag
  // from its oldest record, so the figure is the worst lag of any row in the batch.
  std::optional<int64_t> oldest_record_time_micros;
  // When the source knows it: what is still waiting at the source past position_after, in the unit its spec
  // declares (ConnectorSpec::backlog).
  std::optional<uint64_t> backlog;
};

class Source {
 public:
  virtual ~Source() = default;
  // Opens connections and checks what can be checked before anything is read (exit 2 on a config mistake).
  virtual Status open() { return ok(); }
  virtual Result<Poll> poll(const Budget& budget) = 0;
  // Resume after `position` (the position_after of the last committed batch). An empty position = from the start.
  virtual Status seek(const Position& position) = 0;
  // Everything up to `position` is committed to the WAL. Called from the WAL stage's thread.
  virtual Status acknowledge(const Position&) { return ok(); }
  // A push or streaming source (HttpServer, Kafka): its poll waits briefly for data itself, so after a drained poll
  // the engine polls again at once instead of sleeping SYNC_FREQUENCY. With --once it still ends when drained.
  virtual bool streaming() const { return false; }
  // True when seek() can resume from a position an earlier DATA_DIR committed (it reads the same data again from
  // there: a file, a table by cursor, a Kafka offset). A fresh DATA_DIR then resumes from the newest position the
  // destination's ledger holds. False for a source whose past is gone once read (HttpServer) or held elsewhere
  // (a CDC slot that has moved on): a fresh DATA_DIR reads it from the start.
  virtual bool resumes_from_destination() const { return false; }
  // True when the configuration names several streams (a File path with {stream}, several tables): its batches carry
  // stream names, and the pipeline's sink must land each stream in its own table (ConnectorSpec::lands_streams).
  // Known from the parameters alone, so `validate` can refuse a sink that cannot.
  virtual bool names_streams() const { return false; }
  // RESYNC STREAM: per stream, how many re-syncs the pipeline's state asks for (PipelineState::resync_requests),
  // given before seek(). A source that can (ConnectorSpec::resyncs_streams) reads each stream asked for again once,
  // and keeps in its position which requests it answered.
  virtual void request_resyncs(const std::map<std::string, uint64_t>& /*requests*/) {}
};

enum class Guarantee { kExactlyOnce, kOverwriteOnRetry, kAtLeastOnce, kNone };
const char* to_string(Guarantee g);

enum class WriteOutcome { kApplied, kAlreadyApplied };

// What a destination's ledger holds of one pipeline (in the target this sink writes): read when a sync starts with a
// new DATA_DIR, so it resumes where the destination stands instead of from the start.
struct LedgerTip {
  std::string batch_id;     // the newest batch of the pipeline there
  Position position_after;  // the source position after it; empty when written by a version that kept none
  uint64_t max_epoch = 0;   // the highest epoch of the pipeline there: new batches must order after it
};

// One committed batch as the lander hands it to a sink: of a batch that holds several streams, one per stream, each
// with the batch's id (a sink's ledger keys its rows by target table and id, so each stream's landing is its own).
struct BatchToLand {
  const Batch& batch;
  const BatchId& id;
  const Position& position_after;  // goes into the destination's ledger with the id
  // An earlier run or an earlier attempt of this one may have landed it (a replay after a restart, a retry after a
  // failure). A sink without a ledger (at least once) asks its destination first only then, when it is cheap to.
  bool maybe_landed = false;
};

// What became of one batch of a group.
struct BatchLanded {
  WriteOutcome outcome = WriteOutcome::kApplied;
  uint64_t rows_rejected = 0;  // rows that went to the destination's rejects table instead (see conform_batch.h)
};

// How messages name a group: the id of its one batch, or "<first> .. <last> (N batches)".
std::string group_ids(std::span<const BatchToLand> group);

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Guarantee guarantee() const = 0;
  // Connects. kUnavailable is retried by the engine; kConfig stops the run.
  virtual Status open() { return ok(); }
  // Lands `batch` under `id`; a ledger keeps `position_after` with the id (see ledger_tip).
  virtual Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) = 0;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id) { return write(batch, id, Position{}); }
  // A sink whose destination records each batch with its position (an exactly-once ledger) overrides both: the
  // engine asks (after open) when DATA_DIR has no state for the pipeline. nullopt: the destination holds nothing of
  // it.
  virtual bool keeps_ledger() const { return false; }
  // How many rows of the last applied write went to the destination's rejects table instead of the target (values
  // no column type could take; see sinks/kit/conform_batch.h), with their reason, in the same transaction.
  virtual uint64_t rows_rejected_by_last_write() const { return 0; }
  virtual Result<std::optional<LedgerTip>> ledger_tip() { return std::optional<LedgerTip>(); }
  // Called before ledger_tip by a run that starts with a new `lineage` (DATA_DIR lost, or a state that outlives its
  // WAL): a destination whose executions outlive their client (a warehouse API) makes sure no landing of an earlier
  // lineage can commit after this returns, so the tip that follows is final (sinks/kit/destination_fence.h; Databricks
  // gets there in ledger_tip, by finishing every landing an earlier process committed). Transient errors are retried.
  virtual Status take_over(std::string_view lineage) {
    (void)lineage;
    return ok();
  }

  // Coalesced landing. When several committed batches wait, the engine hands a sink that lands_groups() up to
  // that many at once, in WAL order; the sink lands them in one destination transaction, all or none, recording
  // every BatchId in its ledger. A replay after a crash may group batches differently from the run that landed some
  // of them, so each id is checked on its own: the ones already there come back kAlreadyApplied, the rest are
  // applied. Returns one entry per batch. A sink that cannot make a group atomic keeps lands_groups() false and is
  // handed one batch at a time (the default below, which is write()).
  virtual bool lands_groups() const { return false; }
  virtual Result<std::vector<BatchLanded>> write_group(std::span<const BatchToLand> group);

  // Nothing has waited to land for a while (between polls, say): a sink holding what others need while it lands
  // (DuckDB's lock on its file) lets go of it here; its next write takes it again.
  virtual void idle() {}
};

enum class ParamType { kString, kInt, kDouble, kBool, kPath, kStringList, kStringMap };
const char* to_string(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kString;
  bool required = false;
  nlohmann::json default_value;  // null when there is none
  std::string doc;
};

enum class Landing { kAppend, kMergeByKey, kReplacePartition, kReplaceTable };
const char* to_string(Landing l);

// What a connector factory receives: validated parameters (defaults applied, ${VAR} expanded, paths absolute).
struct ConnectorContext {
  std::string name;  // the connector's name in skippr.yml
  std::string pipeline;
  nlohmann::json params;               // an object
  std::filesystem::path pipeline_dir;  // DATA_DIR/pipelines/<name>
  Landing landing = Landing::kAppend;
  std::vector<std::string> primary_key;
  std::vector<std::string> partition_by;  // with replace_partition
  // Sinks: the pipeline's source names several streams (Source::names_streams), each to land in its own table.
  bool source_streams = false;
  // Sinks: the source's batches carry their own merge key (ConnectorSpec::keys_streams); merge_by_key then needs
  // no primary_key, and each batch merges on Batch::key.
  bool source_keys = false;
};

struct ConnectorSpec {
  std::string type_name;  // the YAML key, e.g. "DuckDB"
  bool is_source = false;
  std::string summary;
  Guarantee guarantee = Guarantee::kNone;  // sinks only
  std::vector<ParamSpec> params;
  // Sources that re-read on purpose: the landing (and its partition_by) of a pipeline that names none.
  std::optional<Landing> default_landing;
  std::vector<std::string> default_partition_by;
  // Sinks only: the longest column name the destination keeps, in bytes (0: no limit). Longer field names land
  // under a shortened name (core/identifier_limit.h), as do the primary_key and partition_by the sink is given.
  size_t max_identifier_bytes = 0;
  // Sinks only: lands each stream of a source that names several in a table (or prefix) of its own, from a `table`
  // that may hold {stream} (docs/streams.md).
  bool lands_streams = false;
  // Sources whose parameters `params` (as written; possibly invalid) make each stream's batches carry the key
  // merge_by_key merges them on (Batch::key: each table's own primary key), so the pipeline needs no primary_key.
  std::function<bool(const nlohmann::json& params)> keys_streams;
  // Sources whose parameters `params` let them read one stream again on its own (Source::request_resyncs).
  std::function<bool(const nlohmann::json& params)> resyncs_streams;
  // Sources that can tell what they still have to read (Poll::backlog): the unit they count it in.
  std::optional<BacklogUnit> backlog;
  std::function<Result<std::unique_ptr<Source>>(const ConnectorContext&)> make_source;
  std::function<Result<std::unique_ptr<Sink>>(const ConnectorContext&)> make_sink;
};

// Every connector this build has, sources first. Generated from the connectors' declarations (connector.cmake in
// each connector's folder; cmake/SkipprConnectors.cmake) into build/generated/connector_registry.cc.
const std::vector<ConnectorSpec>& connector_registry();
const ConnectorSpec* find_connector(std::string_view type_name, bool is_source);

}  // namespace skippr
