#include "sinks/athena_iceberg/athena_iceberg_sink.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"
#include "clients/aws/glue_client.h"
#include "clients/aws/s3_client.h"
#include "formats/iceberg/glue_catalog.h"
#include "sinks/kit/iceberg_sink.h"
#include "sinks/kit/object_sink.h"

namespace skippr {
namespace {

struct GlueTable {
  std::string bucket;
  std::string prefix;  // the table's key prefix: <prefix>/<table>
  std::string database;
  std::string table;
  AwsOptions aws;
};

Result<std::unique_ptr<IcebergTableWriter>> make_writer(const GlueTable& at, const IcebergWriterOptions& options) {
  auto s3 = resolve_aws_service(at.aws, "s3", options.what);
  if (!s3) return std::unexpected(s3.error());
  auto glue_service = resolve_aws_service(at.aws, "glue", options.what);
  if (!glue_service) return std::unexpected(glue_service.error());
  S3Client client(std::move(*s3));
  SKIPPR_TRY(client.check_bucket(at.bucket));
  GlueClient glue(std::move(*glue_service));
  SKIPPR_TRY(glue.ensure_database(at.database));
  auto store = s3_table_store(std::move(client), at.bucket, at.prefix);
  auto catalog = glue_catalog(*store, std::move(glue), at.database, at.table);
  return std::make_unique<IcebergTableWriter>(options, std::move(store), std::move(catalog));
}

}  // namespace

ConnectorSpec athena_iceberg_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "AthenaIceberg";
  spec.is_source = false;
  spec.summary = "an Apache Iceberg v2 table on S3 in the AWS Glue catalog (Athena); batch ids in snapshot summaries";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.max_identifier_bytes = 255;  // Glue column names hold 255 characters; counted in bytes to be safe
  spec.params = {
      {"bucket", ParamType::kString, true, nullptr, "the bucket of the table's files"},
      {"prefix", ParamType::kString, false, "", "key prefix; the table's files go under <prefix>/<table>/"},
      {"database", ParamType::kString, true, nullptr, "the Glue database (created if missing)"},
      {"table", ParamType::kString, true, nullptr, "the Glue table (created by the first batch)"},
  };
  for (auto& param : iceberg_table_params()) spec.params.push_back(std::move(param));
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    const std::string what = fmt::format("AthenaIceberg sink '{}'", ctx.name);
    auto options = read_iceberg_table_options(ctx, what);
    if (!options) return std::unexpected(options.error());
    GlueTable at;
    at.bucket = p.value("bucket", std::string());
    at.database = p.value("database", std::string());
    at.table = p.value("table", std::string());
    SKIPPR_TRY(check_bucket_name(what, at.bucket));
    SKIPPR_TRY(check_glue_name(what, at.database));
    SKIPPR_TRY(check_glue_name(what, at.table));
    std::string prefix = p.value("prefix", std::string());
    while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
    while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
    at.prefix = prefix.empty() ? at.table : prefix + "/" + at.table;
    auto aws = read_aws_options(p, what);
    if (!aws) return std::unexpected(aws.error());
    at.aws = std::move(*aws);
    return std::make_unique<IcebergSink>(what, ctx.pipeline,
                                         [at, o = std::move(*options)] { return make_writer(at, o); });
  };
  return spec;
}

}  // namespace skippr
