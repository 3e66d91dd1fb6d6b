#include "sinks/s3/s3_sink.h"

#include "sinks/kit/s3_object_sink.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

ConnectorSpec s3_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "S3";
  spec.is_source = false;
  spec.summary = "one object per batch (Parquet, JSON lines or CSV) in an S3 bucket, written once (If-None-Match)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = s3_object_sink_params();
  lands_streams_in_folders(spec, "prefix");
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    auto options = read_s3_object_sink_options(ctx, "S3");
    if (!options) return std::unexpected(options.error());
    return std::make_unique<S3ObjectSink>(std::move(*options));
  };
  return spec;
}

}  // namespace skippr
