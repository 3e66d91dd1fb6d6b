#include "sinks/athena_iceberg/athena_iceberg_sink.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"
#include "clients/aws/glue_client.h"
#include "core/ascii.h"
#include "formats/iceberg/glue_catalog.h"
#include "sinks/kit/iceberg_sink.h"
#include "sinks/kit/object_sink.h"

namespace skippr {
namespace {

// Where the tables go: a Glue database, each table's files under <prefix>/<table>/ of the bucket.
struct GlueLake {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'
  std::string database;
  AwsOptions aws;
  // Shared by every copy (each table's writer, the root's store): the bucket is checked and the database made once
  // per sink, whatever its number of tables.
  std::shared_ptr<bool> bucket_checked = std::make_shared<bool>(false);
  std::shared_ptr<bool> database_ensured = std::make_shared<bool>(false);
};

Result<std::unique_ptr<TableStore>> store_at(const GlueLake& lake, const std::string& table, const std::string& what) {
  return s3_lake_store(lake.aws, lake.bucket, lake.prefix, table, what, *lake.bucket_checked);
}

Result<std::unique_ptr<IcebergTableWriter>> make_writer(const GlueLake& lake, const std::string& stream_table,
                                                        const IcebergWriterOptions& options) {
  // Glue keeps names in lower case (a stream's name may have capitals): the table and its folder are spelled so.
  const std::string table = ascii_lowercase(stream_table);
  auto glue_service = resolve_aws_service(lake.aws, "glue", options.what);
  if (!glue_service) return std::unexpected(glue_service.error());
  auto store = store_at(lake, table, options.what);
  if (!store) return std::unexpected(store.error());
  GlueClient glue(std::move(*glue_service));
  if (!*lake.database_ensured) {
    SKIPPR_TRY(glue.ensure_database(lake.database));
    *lake.database_ensured = true;
  }
  auto catalog = glue_catalog(**store, std::move(glue), lake.database, table);
  return std::make_unique<IcebergTableWriter>(options, std::move(*store), std::move(catalog));
}

}  // namespace

ConnectorSpec athena_iceberg_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "AthenaIceberg";
  spec.is_source = false;
  spec.summary = "an Apache Iceberg v2 table on S3 in the AWS Glue catalog (Athena); batch ids in snapshot summaries";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;        // a Glue table per stream; a landing record makes a batch's tables one commitment
  spec.max_identifier_bytes = 255;  // Glue column names hold 255 characters; counted in bytes to be safe
  spec.params = {
      {"bucket", ParamType::kString, true, nullptr, "the bucket of the table's files"},
      {"prefix", ParamType::kString, false, "", "key prefix; the table's files go under <prefix>/<table>/"},
      {"database", ParamType::kString, true, nullptr, "the Glue database (created if missing)"},
      {"table", ParamType::kString, false, nullptr,
       "the Glue table (created by the first batch); may hold {stream} (default for a source of several streams: "
       "{stream}, a table per stream)"},
  };
  for (auto& param : iceberg_table_params()) spec.params.push_back(std::move(param));
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    const std::string what = fmt::format("AthenaIceberg sink '{}'", ctx.name);
    auto options = read_iceberg_table_options(ctx, what);
    if (!options) return std::unexpected(options.error());
    GlueLake lake;
    lake.bucket = p.value("bucket", std::string());
    lake.database = p.value("database", std::string());
    auto tables = StreamTables::make(what, "table", StreamTables::given(p, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    SKIPPR_TRY(check_bucket_name(what, lake.bucket));
    SKIPPR_TRY(check_glue_name(what, lake.database));
    // A stream's table is the pattern with a plain name in it: checked with one.
    SKIPPR_TRY(check_glue_name(what, tables->table_for(tables->per_stream() ? "x" : "")));
    lake.prefix = p.value("prefix", std::string());
    while (!lake.prefix.empty() && lake.prefix.front() == '/') lake.prefix.erase(0, 1);
    while (!lake.prefix.empty() && lake.prefix.back() == '/') lake.prefix.pop_back();
    auto aws = read_aws_options(p, what);
    if (!aws) return std::unexpected(aws.error());
    lake.aws = std::move(*aws);
    return std::make_unique<IcebergSink>(
        what, ctx.pipeline, std::move(*tables),
        [lake, o = std::move(*options)](const std::string& t) { return make_writer(lake, t, o); },
        [lake, what] { return store_at(lake, "", what); });
  };
  return spec;
}

}  // namespace skippr
