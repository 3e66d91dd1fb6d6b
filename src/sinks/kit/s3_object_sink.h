// The object sink on S3 that the S3 and Athena sinks share: one object per batch (per partition folder), put with
// If-None-Match: * (a multipart upload for a large one), and the parameters and their reading.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "clients/aws/aws_config.h"
#include "clients/aws/s3_client.h"
#include "sinks/kit/object_sink.h"

namespace skippr {

struct S3ObjectSinkOptions {
  ObjectSinkOptions object;
  std::string bucket;
  AwsOptions aws;
  size_t multipart_threshold_bytes = 64 << 20;
  size_t multipart_part_bytes = 16 << 20;
};

class S3ObjectSink : public ObjectSink {
 public:
  explicit S3ObjectSink(S3ObjectSinkOptions options)
      : ObjectSink(std::move(options.object)), options_(std::move(options)) {}
  Status open() override;

 protected:
  const S3ObjectSinkOptions& s3_options() const { return options_; }

 private:
  Result<ObjectPut> put_if_absent(const std::string& key, std::string_view bytes, const char* type) override;

  S3ObjectSinkOptions options_;
  std::optional<S3Client> client_;
};

// bucket, prefix, multipart_*, the AWS connection and (with `with_format`) the format parameters, partition_by.
std::vector<ParamSpec> s3_object_sink_params(bool with_format = true);
Result<S3ObjectSinkOptions> read_s3_object_sink_options(const ConnectorContext& ctx, std::string_view type);

}  // namespace skippr
