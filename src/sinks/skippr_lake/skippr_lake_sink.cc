#include "sinks/skippr_lake/skippr_lake_sink.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"
#include "sinks/kit/iceberg_sink.h"

namespace skippr {
namespace {

// The lake: a local folder, or an S3 bucket and key prefix; each table is a folder of it.
struct Lake {
  std::string folder;
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'
  AwsOptions aws;
  // Shared by every copy (each table's store, the root's): the bucket is checked once per sink.
  std::shared_ptr<bool> bucket_checked = std::make_shared<bool>(false);
};

Result<std::unique_ptr<TableStore>> store_at(const Lake& lake, const std::string& table, const std::string& what) {
  if (lake.bucket.empty()) {
    return folder_table_store(table.empty() ? std::filesystem::path(lake.folder)
                                            : std::filesystem::path(lake.folder) / table);
  }
  return s3_lake_store(lake.aws, lake.bucket, lake.prefix, table, what, *lake.bucket_checked);
}

Result<std::unique_ptr<IcebergTableWriter>> make_writer(const Lake& lake, const std::string& table,
                                                        const IcebergWriterOptions& options) {
  auto store = store_at(lake, table, options.what);
  if (!store) return std::unexpected(store.error());
  auto catalog = storage_catalog(**store);
  return std::make_unique<IcebergTableWriter>(options, std::move(*store), std::move(catalog));
}

}  // namespace

ConnectorSpec skippr_lake_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "SkipprLake";
  spec.is_source = false;
  spec.summary = "an Apache Iceberg v2 table in a folder or on S3; each batch's id in its snapshot's summary";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.lands_streams = true;  // a table per stream; a landing record makes a batch's tables one commitment
  spec.params = {
      {"path", ParamType::kString, true, nullptr, "the lake: a local folder, or s3://bucket/prefix"},
      {"table", ParamType::kString, false, nullptr,
       "the table's folder under path; may hold {stream} (default for a source of several streams: {stream}, a "
       "table per stream)"},
  };
  for (auto& param : iceberg_table_params()) spec.params.push_back(std::move(param));
  for (auto& param : aws_connection_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    const std::string what = fmt::format("SkipprLake sink '{}'", ctx.name);
    auto options = read_iceberg_table_options(ctx, what);
    if (!options) return std::unexpected(options.error());
    const std::string path = p.value("path", std::string());
    auto tables = StreamTables::make(what, "table", StreamTables::given(p, "table"), ctx.source_streams);
    if (!tables) return std::unexpected(tables.error());
    // A stream's table is the pattern with a plain name in it: checked with one.
    const std::string table = tables->table_for(tables->per_stream() ? "x" : "");
    if (table.empty() || table.find('/') != std::string::npos || table == "." || table == ".." ||
        table.starts_with(".skippr")) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: table '{}' must be a plain name (no '/', not starting with .skippr)", what,
                              tables->pattern()));
    }
    Lake lake;
    if (path.starts_with("s3://")) {
      const std::string rest = path.substr(5);
      const auto slash = rest.find('/');
      lake.bucket = rest.substr(0, slash);
      lake.prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
      while (!lake.prefix.empty() && lake.prefix.back() == '/') lake.prefix.pop_back();
      if (lake.bucket.empty()) {
        return fail(ErrorKind::kConfig, fmt::format("{}: path '{}' names no bucket (s3://bucket/prefix)", what, path));
      }
      auto aws = read_aws_options(p, what);
      if (!aws) return std::unexpected(aws.error());
      lake.aws = std::move(*aws);
    } else if (path.find("://") != std::string::npos) {
      return fail(ErrorKind::kConfig,
                  fmt::format("{}: path '{}' must be a local folder or s3://bucket/prefix", what, path));
    } else {
      lake.folder = path;
    }
    return std::make_unique<IcebergSink>(
        what, ctx.pipeline, std::move(*tables),
        [lake, o = std::move(*options)](const std::string& t) { return make_writer(lake, t, o); },
        [lake, what] { return store_at(lake, "", what); });
  };
  return spec;
}

}  // namespace skippr
