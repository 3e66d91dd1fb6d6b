// What every sink that writes one object or file per batch (S3, AzureBlob, GCS, SFTP) does the same way: group the
// rows into Hive partition folders, encode each group in the configured format, name it from the BatchId, and have
// the store create it only if no object has that name. A replayed batch then finds its objects and leaves them as
// they are ("overwrite on retry" made exact). A store says only how to connect and how to put one object.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/connector.h"
#include "formats/object_encoding.h"

namespace skippr {

struct ObjectSinkOptions {
  std::string what;    // "S3 sink 'lake'": the start of every message
  std::string prefix;  // "" or ending in '/': before every object name; with {stream} for a source of several
  ObjectEncoding encoding;
  std::vector<std::string> partition_by;
  std::filesystem::path scratch_dir;  // Parquet's scratch file
};

enum class ObjectPut { kCreated, kAlreadyExists };

class ObjectSink : public Sink {
 public:
  explicit ObjectSink(ObjectSinkOptions options);
  Guarantee guarantee() const final { return Guarantee::kOverwriteOnRetry; }
  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position& position_after) final;

 protected:
  // Creates `name` with `bytes` unless an object of that name exists (kAlreadyExists: it is left as it is).
  virtual Result<ObjectPut> put_if_absent(const std::string& name, std::string_view bytes,
                                          const char* content_type) = 0;
  // After a write failed: e.g. drop a connection that broke, so the engine's retry (which calls open()) reconnects.
  virtual void write_failed() {}
  // Before a batch's objects are put (Athena: its catalog table gets the batch's new columns).
  virtual Status before_objects(const Batch&) { return ok(); }
  // After every object of a batch is there, put now or found from an earlier try, with the partition folders
  // ("col=value/", "" without partition_by) they are in (Athena: registers them in its catalog). A replay passes here
  // too, so what a crash interrupted is finished.
  virtual Status after_objects(const std::vector<std::string>& folders) {
    (void)folders;
    return ok();
  }
  const ObjectSinkOptions& object_options() const { return options_; }
  const std::string& what() const { return options_.what; }
  // The scratch folder exists (call from open()).
  void make_scratch_dir() const;

 private:
  ObjectSinkOptions options_;
  ObjectEncoder encoder_;
};

// kConfig naming `what` unless `bucket` is a bucket name (no '/': folders go into prefix).
Status check_bucket_name(std::string_view what, const std::string& bucket);

// partition_by and the format parameters, as every object sink declares them.
std::vector<ParamSpec> object_sink_params();
// The shared options of sink `ctx` of type `type`: kConfig naming it for a landing other than append or a bad
// format. `prefix` is normalized (no leading '/', a trailing one) and, for a source of several streams, holds {stream}
// (sinks/kit/stream_tables.h: "{stream}/" added when the user wrote none).
Result<ObjectSinkOptions> read_object_sink_options(const ConnectorContext& ctx, std::string_view type,
                                                   std::string prefix);

}  // namespace skippr
