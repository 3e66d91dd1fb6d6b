#include "sinks/azure_blob/azure_blob_sink.h"

#include <fmt/format.h>

#include <optional>

#include "clients/azure/azure_params.h"
#include "clients/azure/blob_client.h"
#include "formats/object_encoding.h"
#include "sinks/object_partitions.h"

namespace skippr {
namespace {

struct AzureBlobSinkOptions {
  std::string name;
  std::string container;
  std::string prefix;  // "" or ending in '/'
  ObjectEncoding encoding;
  std::vector<std::string> partition_by;
  AzureOptions azure;
  size_t block_threshold_bytes = 64 << 20;
  size_t block_bytes = 16 << 20;
  std::filesystem::path scratch_dir;
};

class AzureBlobSink final : public Sink {
 public:
  explicit AzureBlobSink(AzureBlobSinkOptions options)
      : options_(std::move(options)), encoder_(options_.encoding, options_.scratch_dir) {}

  Guarantee guarantee() const override { return Guarantee::kOverwriteOnRetry; }

  // Resolves the credentials and checks the container, so a wrong key or a missing container stops the run before
  // anything is read or committed.
  Status open() override {
    if (client_) return ok();
    auto account = resolve_azure_account(options_.azure, what());
    if (!account) return std::unexpected(account.error());
    BlobClient client(std::move(*account));
    if (auto checked = client.check_container(options_.container); !checked) {
      return fail(checked.error().kind, fmt::format("{}: {}", what(), checked.error().message));
    }
    std::error_code ec;
    std::filesystem::create_directories(options_.scratch_dir, ec);
    client_.emplace(std::move(client));
    return ok();
  }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    if (batch.rows == 0) return WriteOutcome::kApplied;  // dead letters only: no blob
    SKIPPR_TRY(open());
    bool created = false;
    for (const auto& [folder, rows] : hive_partitions(batch, options_.partition_by)) {
      const std::string name = options_.prefix + folder + batch_object_name(id, options_.encoding);
      auto bytes = rows ? encoder_.encode(rows_of(batch, *rows)) : encoder_.encode(batch);
      if (!bytes) return std::unexpected(bytes.error());
      const char* type = options_.encoding.content_type();
      auto put = bytes->size() >= options_.block_threshold_bytes
                     ? client_->put_blocks_if_absent(options_.container, name, *bytes, options_.block_bytes, type)
                     : client_->put_blob_if_absent(options_.container, name, *bytes, type);
      if (!put) return fail(put.error().kind, fmt::format("{}: batch {}: {}", what(), id.str(), put.error().message));
      created = created || *put == BlobPutOutcome::kCreated;
    }
    return created ? WriteOutcome::kApplied : WriteOutcome::kAlreadyApplied;
  }

 private:
  std::string what() const { return fmt::format("AzureBlob sink '{}'", options_.name); }

  AzureBlobSinkOptions options_;
  ObjectEncoder encoder_;
  std::optional<BlobClient> client_;
};

}  // namespace

ConnectorSpec azure_blob_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "AzureBlob";
  spec.is_source = false;
  spec.summary =
      "one blob per batch (Parquet, JSON lines or CSV) in an Azure Storage container, written once (If-None-Match)";
  spec.guarantee = Guarantee::kOverwriteOnRetry;
  spec.params = {
      {"account", ParamType::kString, true, nullptr, "the storage account"},
      {"container", ParamType::kString, true, nullptr, "the container"},
      {"prefix", ParamType::kString, false, "", "blob name prefix, e.g. landing/orders/"},
      {"endpoint", ParamType::kString, false, nullptr,
       "the account's blob endpoint, e.g. http://127.0.0.1:10000/devstoreaccount1 for Azurite (default: "
       "https://<account>.blob.core.windows.net)"},
      {"partition_by", ParamType::kStringList, false, nullptr, "fields whose values make Hive-style folders"},
      {"block_threshold_bytes", ParamType::kInt, false, 64 << 20,
       "a blob from this size on is uploaded as blocks and one Put Block List"},
      {"block_bytes", ParamType::kInt, false, 16 << 20, "the size of each block"},
  };
  for (auto& param : azure_credential_params()) spec.params.push_back(std::move(param));
  for (auto& param : object_encoding_params()) spec.params.push_back(std::move(param));
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const std::string what = fmt::format("AzureBlob sink '{}'", ctx.name);
    if (ctx.landing != Landing::kAppend) {
      return fail(ErrorKind::kConfig, fmt::format("sink '{}': landing {} is not supported by AzureBlob; use append",
                                                  ctx.name, to_string(ctx.landing)));
    }
    const auto& p = ctx.params;
    AzureBlobSinkOptions o;
    o.name = ctx.name;
    o.container = p.value("container", std::string());
    if (o.container.empty() || o.container.find('/') != std::string::npos) {
      return fail(ErrorKind::kConfig, fmt::format("{}: container '{}' must be a container name (put folders into "
                                                  "prefix)",
                                                  what, o.container));
    }
    o.prefix = p.value("prefix", std::string());
    while (!o.prefix.empty() && o.prefix.front() == '/') o.prefix.erase(0, 1);
    if (!o.prefix.empty() && o.prefix.back() != '/') o.prefix += '/';
    auto encoding = read_object_encoding(p, what);
    if (!encoding) return std::unexpected(encoding.error());
    o.encoding = std::move(*encoding);
    o.partition_by = p.value("partition_by", std::vector<std::string>{});
    o.azure = read_azure_options(p);
    const int64_t threshold = p.value("block_threshold_bytes", int64_t{64 << 20});
    const int64_t block = p.value("block_bytes", int64_t{16 << 20});
    // 4000 MiB is the service's largest block.
    if (threshold <= 0 || block <= 0 || block > int64_t{4000} << 20) {
      return fail(ErrorKind::kConfig, fmt::format("{}: block_threshold_bytes must be positive and block_bytes "
                                                  "between 1 and 4194304000 (4000 MiB, the service's largest block)",
                                                  what));
    }
    o.block_threshold_bytes = static_cast<size_t>(threshold);
    o.block_bytes = static_cast<size_t>(block);
    o.scratch_dir = ctx.pipeline_dir.empty() ? std::filesystem::temp_directory_path() / "skippr-azure-blob"
                                             : ctx.pipeline_dir / "azure-blob-scratch";
    return std::make_unique<AzureBlobSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
