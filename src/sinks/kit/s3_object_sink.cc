#include "sinks/kit/s3_object_sink.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"

namespace skippr {

Status S3ObjectSink::open() {
  if (client_) return ok();
  auto service = resolve_aws_service(options_.aws, "s3", what());
  if (!service) return std::unexpected(service.error());
  S3Client client(std::move(*service));
  SKIPPR_TRY(client.check_bucket(options_.bucket));
  make_scratch_dir();
  client_.emplace(std::move(client));
  return ok();
}

Result<ObjectPut> S3ObjectSink::put_if_absent(const std::string& key, std::string_view bytes, const char* type) {
  auto put = bytes.size() >= options_.multipart_threshold_bytes
                 ? client_->put_large_object_if_absent(options_.bucket, key, bytes, options_.multipart_part_bytes, type)
                 : client_->put_object_if_absent(options_.bucket, key, bytes, type);
  if (!put) return std::unexpected(put.error());
  return *put == PutOutcome::kCreated ? ObjectPut::kCreated : ObjectPut::kAlreadyExists;
}

std::vector<ParamSpec> s3_object_sink_params(bool with_format) {
  std::vector<ParamSpec> params = {
      {"bucket", ParamType::kString, true, nullptr, "the bucket"},
      {"prefix", ParamType::kString, false, "", "key prefix, e.g. landing/orders/"},
      {"multipart_threshold_bytes", ParamType::kInt, false, 64 << 20,
       "an object from this size on is a multipart upload"},
      {"multipart_part_bytes", ParamType::kInt, false, 16 << 20, "the size of each part (at least 5 MiB)"},
  };
  for (auto& param : aws_connection_params()) params.push_back(std::move(param));
  for (auto& param : object_sink_params()) {
    if (with_format || param.name == "partition_by") params.push_back(std::move(param));
  }
  return params;
}

Result<S3ObjectSinkOptions> read_s3_object_sink_options(const ConnectorContext& ctx, std::string_view type) {
  const auto& p = ctx.params;
  auto object = read_object_sink_options(ctx, type, p.value("prefix", std::string()));
  if (!object) return std::unexpected(object.error());
  S3ObjectSinkOptions o;
  o.object = std::move(*object);
  const std::string& what = o.object.what;
  o.bucket = p.value("bucket", std::string());
  SKIPPR_TRY(check_bucket_name(what, o.bucket));
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
  return o;
}

}  // namespace skippr
