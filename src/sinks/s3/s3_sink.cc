#include "sinks/s3/s3_sink.h"

#include <fmt/format.h>

#include <optional>

#include "clients/aws/aws_params.h"
#include "clients/aws/s3_client.h"
#include "formats/object_encoding.h"
#include "sinks/object_partitions.h"

namespace skippr {
namespace {

struct S3SinkOptions {
  std::string name;
  std::string bucket;
  std::string prefix;  // "" or ending in '/'
  ObjectEncoding encoding;
  std::vector<std::string> partition_by;
  AwsOptions aws;
  size_t multipart_threshold_bytes = 64 << 20;
  size_t multipart_part_bytes = 16 << 20;
  std::filesystem::path scratch_dir;
};

class S3Sink final : public Sink {
 public:
  explicit S3Sink(S3SinkOptions options)
      : options_(std::move(options)), encoder_(options_.encoding, options_.scratch_dir) {}

  Guarantee guarantee() const override { return Guarantee::kOverwriteOnRetry; }

  Status open() override {
    if (client_) return ok();
    auto service = resolve_aws_service(options_.aws, "s3", what());
    if (!service) return std::unexpected(service.error());
    S3Client client(std::move(*service));
    SKIPPR_TRY(client.check_bucket(options_.bucket));
    std::error_code ec;
    std::filesystem::create_directories(options_.scratch_dir, ec);
    client_.emplace(std::move(client));
    return ok();
  }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    if (batch.rows == 0) return WriteOutcome::kApplied;  // dead letters only: no object
    SKIPPR_TRY(open());
    bool created = false;
    for (const auto& [folder, rows] : hive_partitions(batch, options_.partition_by)) {
      const std::string key = options_.prefix + folder + batch_object_name(id, options_.encoding);
      auto bytes = rows ? encoder_.encode(rows_of(batch, *rows)) : encoder_.encode(batch);
      if (!bytes) return std::unexpected(bytes.error());
      const char* type = options_.encoding.content_type();
      auto put =
          bytes->size() >= options_.multipart_threshold_bytes
              ? client_->put_large_object_if_absent(options_.bucket, key, *bytes, options_.multipart_part_bytes, type)
              : client_->put_object_if_absent(options_.bucket, key, *bytes, type);
      if (!put) return fail(put.error().kind, fmt::format("{}: batch {}: {}", what(), id.str(), put.error().message));
      created = created || *put == PutOutcome::kCreated;
    }
    return created ? WriteOutcome::kApplied : WriteOutcome::kAlreadyApplied;
  }

 private:
  std::string what() const { return fmt::format("S3 sink '{}'", options_.name); }

  S3SinkOptions options_;
  ObjectEncoder encoder_;
  std::optional<S3Client> client_;
};

}  // namespace

ConnectorSpec s3_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "S3";
  spec.is_source = false;
  spec.summary = "one object per batch (Parquet, JSON lines or CSV) in an S3 bucket, written once (If-None-Match)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {
      {"bucket", ParamType::kString, true, nullptr, "the bucket"},
      {"prefix", ParamType::kString, false, "", "key prefix, e.g. landing/orders/"},
      {"partition_by", ParamType::kStringList, false, nullptr, "fields whose values make Hive-style folders"},
      {"multipart_threshold_bytes", ParamType::kInt, false, 64 << 20,
       "an object from this size on is a multipart upload"},
      {"multipart_part_bytes", ParamType::kInt, false, 16 << 20, "the size of each part (at least 5 MiB)"},
  };
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  for (auto& param : object_encoding_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string what = fmt::format("S3 sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by S3; use append", ctx.name,
                                                  to_string(ctx.landing)));
    }
    const auto& p = ctx.params;
    S3SinkOptions o;
    o.name = ctx.name;
    o.bucket = p.value("bucket", std::string());
    if (o.bucket.empty() || o.bucket.find('/') != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: bucket '{}' must be a bucket name (put folders into prefix)", what, o.bucket));
    }
    o.prefix = p.value("prefix", std::string());
    while (!o.prefix.empty() && o.prefix.front() == '/') o.prefix.erase(0, 1);
    if (!o.prefix.empty() && o.prefix.back() != '/') o.prefix += '/';
    auto encoding = read_object_encoding(p, what);
    if (!encoding) return std::unexpected(encoding.error());
    o.encoding = std::move(*encoding);
    o.partition_by = p.value("partition_by", std::vector<std::string>{});
    auto aws = read_aws_options(p, what);
    if (!aws) return std::unexpected(aws.error());
    o.aws = std::move(*aws);
    const int64_t threshold = p.value("multipart_threshold_bytes", int64_t{64 << 20});
    const int64_t part = p.value("multipart_part_bytes", int64_t{16 << 20});
    if (threshold <= 0 || part < (5 << 20)) {
      return fail(ErrorKind::kConfig, fmt::format("{}: multipart_threshold_bytes must be positive and "
                                                  "multipart_part_bytes at least 5 MiB (5242880), S3's floor",
                                                  what));
    }
    o.multipart_threshold_bytes = static_cast<size_t>(threshold);
    o.multipart_part_bytes = static_cast<size_t>(part);
    o.scratch_dir = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / "skippr-s3"
                                             : ctx.pipeline_dir / "s3-scratch";
    return std::make_unique<S3Sink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
