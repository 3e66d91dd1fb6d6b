#include "sinks/kit/object_sink.h"

#include <fmt/format.h>

#include <cctype>

#include "sinks/kit/object_partitions.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {

ObjectSink::ObjectSink(ObjectSinkOptions options)
    : options_(std::move(options)), encoder_(options_.encoding, options_.scratch_dir) {}

void ObjectSink::make_scratch_dir() const {
  std::error_code ec;
  std::filesystem::create_directories(options_.scratch_dir, ec);
}

Result<WriteOutcome> ObjectSink::write(const Batch& batch, const BatchId& id, const Position&) {
  if (batch.rows == 0) return WriteOutcome::kApplied;  // dead letters only: no object
  SKIPPR_TRY(open());
  SKIPPR_TRY(before_objects(batch));
  bool created = false;
  std::vector<std::string> folders;
  const std::string prefix = stream_prefix_for(options_.prefix, batch.stream);
  for (const auto& [folder, rows] : hive_partitions(batch, options_.partition_by)) {
    folders.push_back(folder);
    const std::string name = prefix + folder + batch_object_name(id, options_.encoding);
    auto bytes = rows ? encoder_.encode(rows_of(batch, *rows)) : encoder_.encode(batch);
    if (!bytes) return std::unexpected(bytes.error());
    auto put = put_if_absent(name, *bytes, options_.encoding.content_type());
    if (!put) {
      write_failed();
      return fail(put.error().kind, fmt::format("{}: batch {}: {}", options_.what, id.str(), put.error().message));
    }
    created = created || *put == ObjectPut::kCreated;
  }
  if (auto done = after_objects(folders); !done) {
    write_failed();
    return fail(done.error().kind, fmt::format("{}: batch {}: {}", options_.what, id.str(), done.error().message));
  }
  return created ? WriteOutcome::kApplied : WriteOutcome::kAlreadyApplied;
}

Status check_bucket_name(std::string_view what, const std::string& bucket) {
  if (!bucket.empty() && bucket.find('/') == std::string::npos) return ok();
  return fail(ErrorKind::kConfig,
              fmt::format("{}: bucket '{}' must be a bucket name (put folders into prefix)", what, bucket));
}

std::vector<ParamSpec> object_sink_params() {
  std::vector<ParamSpec> params = {
      {"partition_by", ParamType::kStringList, false, nullptr, "fields whose values make Hive-style folders"},
  };
  for (auto& param : object_encoding_params()) params.push_back(std::move(param));
  return params;
}

Result<ObjectSinkOptions> read_object_sink_options(const ConnectorContext& ctx, std::string_view type,
                                                   std::string prefix) {
  ObjectSinkOptions o;
  o.what = fmt::format("{} sink '{}'", type, ctx.name);
  if (ctx.landing != Landing::kAppend) {
    return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by {}; use append", ctx.name,
                                                to_string(ctx.landing), type));
  }
  while (!prefix.empty() && prefix.front() == '/') prefix.erase(0, 1);
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  auto streamed = stream_prefix(o.what, "prefix", std::move(prefix), ctx.source_streams);
  if (!streamed) return std::unexpected(streamed.error());
  o.prefix = std::move(*streamed);
  auto encoding = read_object_encoding(ctx.params, o.what);
  if (!encoding) return std::unexpected(encoding.error());
  o.encoding = std::move(*encoding);
  o.partition_by = ctx.params.value("partition_by", std::vector<std::string>{});
  std::string folder(type);
  for (auto& c : folder) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  o.scratch_dir = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / ("skippr-" + folder)
                                           : ctx.pipeline_dir / (folder + "-scratch");
  return o;
}

}  // namespace skippr
