#include "sinks/gcs/gcs_sink.h"

#include <fmt/format.h>

#include <optional>

#include "clients/gcs/gcs_client.h"
#include "sinks/kit/object_sink.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

constexpr int64_t kChunkQuantum = 256 << 10;  // the JSON API's unit for every chunk but the last

struct GcsSinkOptions {
  ObjectSinkOptions object;
  std::string bucket;
  GcsOptions gcs;
  size_t resumable_threshold_bytes = 64 << 20;
  size_t resumable_chunk_bytes = 16 << 20;
};

class GcsSink final : public ObjectSink {
 public:
  explicit GcsSink(GcsSinkOptions options) : ObjectSink(std::move(options.object)), options_(std::move(options)) {}

  // Reads the key, gets a token and checks the bucket, so a wrong key or a missing bucket stops the run before
  // anything is read or committed.
  Status open() override {
    if (client_) return ok();
    auto account = load_google_service_account(options_.gcs, what());
    if (!account) return std::unexpected(account.error());
    auto endpoint = resolve_gcs_endpoint(options_.gcs, what());
    if (!endpoint) return std::unexpected(endpoint.error());
    GcsClient client(std::move(*endpoint), std::move(*account));
    if (auto checked = client.check_bucket(options_.bucket); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", what(), checked.error().message));
    }
    make_scratch_dir();
    client_.emplace(std::move(client));
    return ok();
  }

 private:
  Result<ObjectPut> put_if_absent(const std::string& name, std::string_view bytes, const char* type) override {
    auto put =
        bytes.size() >= options_.resumable_threshold_bytes
            ? client_->resumable_insert_if_absent(options_.bucket, name, bytes, options_.resumable_chunk_bytes, type)
            : client_->insert_object_if_absent(options_.bucket, name, bytes, type);
    if (!put) return std::unexpected(put.error());
    return *put == GcsPutOutcome::kCreated ? ObjectPut::kCreated : ObjectPut::kAlreadyExists;
  }

  GcsSinkOptions options_;
  std::optional<GcsClient> client_;
};

}  // namespace

ConnectorSpec gcs_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "GCS";
  spec.is_source = false;
  spec.summary =
      "one object per batch (Parquet, JSON lines or CSV) in a Cloud Storage bucket, written once "
      "(ifGenerationMatch=0)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {
      {"bucket", ParamType::kString, true, nullptr, "the bucket"},
      {"prefix", ParamType::kString, false, "", "object name prefix, e.g. landing/orders/"},
      {"credentials_file", ParamType::kPath, false, nullptr,
       "a service-account JSON key file (default: GOOGLE_APPLICATION_CREDENTIALS)"},
      {"endpoint", ParamType::kString, false, nullptr,
       "the JSON API's origin, e.g. http://127.0.0.1:4443 for an emulator (default: STORAGE_EMULATOR_HOST, "
       "https://storage.googleapis.com)"},
      {"resumable_threshold_bytes", ParamType::kInt, false, 64 << 20,
       "an object from this size on is a resumable upload"},
      {"resumable_chunk_bytes", ParamType::kInt, false, 16 << 20,
       "the size of each chunk of a resumable upload (a multiple of 256 KiB)"},
  };
  for (auto& param : object_sink_params()) spec.params.push_back(std::move(param));
  lands_streams_in_folders(spec, "prefix");
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    auto object = read_object_sink_options(ctx, "GCS", p.value("prefix", std::string()));
    if (!object) return std::unexpected(object.error());
    GcsSinkOptions o;
    o.object = std::move(*object);
    const std::string& what = o.object.what;
    o.bucket = p.value("bucket", std::string());
    SKIPPR_TRY(check_bucket_name(what, o.bucket));
    o.gcs.credentials_file = p.value("credentials_file", std::string());
    o.gcs.endpoint = p.value("endpoint", std::string());
    const int64_t threshold = p.value("resumable_threshold_bytes", int64_t{64 << 20});
    const int64_t chunk = p.value("resumable_chunk_bytes", int64_t{16 << 20});
    if (threshold <= 0 || chunk <= 0 || chunk % kChunkQuantum != 0) {
      return fail(ErrorKind::kConfig, fmt::format("{}: resumable_threshold_bytes must be positive and "
                                                  "resumable_chunk_bytes a multiple of 262144 (256 KiB), the JSON "
                                                  "API's chunk unit",
                                                  what));
    }
    o.resumable_threshold_bytes = static_cast<size_t>(threshold);
    o.resumable_chunk_bytes = static_cast<size_t>(chunk);
    return std::make_unique<GcsSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
