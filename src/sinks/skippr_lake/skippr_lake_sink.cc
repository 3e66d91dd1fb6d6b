#include "sinks/skippr_lake/skippr_lake_sink.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"
#include "clients/aws/s3_client.h"
#include "sinks/kit/iceberg_sink.h"

namespace skippr {
namespace {

struct Location {
  std::string folder;  // a local table root, or
  std::string bucket;  // an S3 one: bucket and key prefix of the table
  std::string prefix;
  AwsOptions aws;
};

Result<std::unique_ptr<IcebergTableWriter>> make_writer(const Location& at, const IcebergWriterOptions& options) {
  std::unique_ptr<TableStore> store;
  if (!at.bucket.empty()) {
    auto service = resolve_aws_service(at.aws, "s3", options.what);
    if (!service) return std::unexpected(service.error());
    S3Client client(std::move(*service));
    SKIPPR_TRY(client.check_bucket(at.bucket));
    store = s3_table_store(std::move(client), at.bucket, at.prefix);
  } else {
    auto folder = folder_table_store(at.folder);
    if (!folder) return std::unexpected(folder.error());
    store = std::move(*folder);
  }
  auto catalog = storage_catalog(*store);
  return std::make_unique<IcebergTableWriter>(options, std::move(store), std::move(catalog));
}

}  // namespace

ConnectorSpec skippr_lake_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "SkipprLake";
  spec.is_source = false;
  spec.summary = "an Apache Iceberg v2 table in a folder or on S3; each batch's id in its snapshot's summary";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.params = {
      {"path", ParamType::kString, true, nullptr, "the lake: a local folder, or s3://bucket/prefix"},
      {"table", ParamType::kString, true, nullptr, "the table's folder under path"},
  };
  for (auto& param : iceberg_table_params()) spec.params.push_back(std::move(param));
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    const std::string what = fmt::format("SkipprLake sink '{}'", ctx.name);
    auto options = read_iceberg_table_options(ctx, what);
    if (!options) return std::unexpected(options.error());
    const std::string path = p.value("path", std::string());
    const std::string table = p.value("table", std::string());
    if (table.empty() || table.find('/') != std::string::npos || table == "." || table == "..") {
      return fail(ErrorKind::kConfig, fmt::format("{}: table '{}' must be a plain name (no '/')", what, table));
    }
    Location at;
    if (path.starts_with("s3://")) {
      const std::string rest = path.substr(5);
      const auto slash = rest.find('/');
      at.bucket = rest.substr(0, slash);
      std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
      while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
      at.prefix = prefix.empty() ? table : prefix + "/" + table;
      if (at.bucket.empty()) {
        return fail(ErrorKind::kConfig, fmt::format("{}: path '{}' names no bucket (s3://bucket/prefix)", what, path));
      }
      auto aws = read_aws_options(p, what);
      if (!aws) return std::unexpected(aws.error());
      at.aws = std::move(*aws);
    } else if (path.find("://") != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: path '{}' must be a local folder or s3://bucket/prefix", what, path));
    } else {
      at.folder = (std::filesystem::path(path) / table).string();
    }
    return std::make_unique<IcebergSink>(what, ctx.pipeline,
                                         [at, o = std::move(*options)] { return make_writer(at, o); });
  };
  return spec;
}

}  // namespace skippr
