#include "sinks/azure_blob/azure_blob_sink.h"

#include <fmt/format.h>

#include <optional>

#include "clients/azure/azure_params.h"
#include "clients/azure/blob_client.h"
#include "sinks/kit/object_sink.h"
#include "sinks/kit/stream_tables.h"

namespace skippr {
namespace {

struct AzureBlobSinkOptions {
  ObjectSinkOptions object;
  std::string container;
  AzureOptions azure;
  size_t block_threshold_bytes = 64 << 20;
  size_t block_bytes = 16 << 20;
};

class AzureBlobSink final : public ObjectSink {
 public:
  explicit AzureBlobSink(AzureBlobSinkOptions options)
      : ObjectSink(std::move(options.object)), options_(std::move(options)) {}

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
    make_scratch_dir();
    client_.emplace(std::move(client));
    return ok();
  }

 private:
  Result<ObjectPut> put_if_absent(const std::string& name, std::string_view bytes, const char* type) override {
    auto put = bytes.size() >= options_.block_threshold_bytes
                   ? client_->put_blocks_if_absent(options_.container, name, bytes, options_.block_bytes, type)
                   : client_->put_blob_if_absent(options_.container, name, bytes, type);
    if (!put) return std::unexpected(put.error());
    return *put == BlobPutOutcome::kCreated ? ObjectPut::kCreated : ObjectPut::kAlreadyExists;
  }

  AzureBlobSinkOptions options_;
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
      {"block_threshold_bytes", ParamType::kInt, false, 64 << 20,
       "a blob from this size on is uploaded as blocks and one Put Block List"},
      {"block_bytes", ParamType::kInt, false, 16 << 20, "the size of each block"},
  };
  for (auto& param : azure_credential_params()) spec.params.push_back(std::move(param));
  for (auto& param : object_sink_params()) spec.params.push_back(std::move(param));
  lands_streams_in_folders(spec, "prefix");
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    const auto& p = ctx.params;
    auto object = read_object_sink_options(ctx, "AzureBlob", p.value("prefix", std::string()));
    if (!object) return std::unexpected(object.error());
    AzureBlobSinkOptions o;
    o.object = std::move(*object);
    const std::string& what = o.object.what;
    o.container = p.value("container", std::string());
    if (o.container.empty() || o.container.find('/') != std::string::npos) {
      return fail(ErrorKind::kConfig, fmt::format("{}: container '{}' must be a container name (put folders into "
                                                  "prefix)",
                                                  what, o.container));
    }
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
    return std::make_unique<AzureBlobSink>(std::move(o));
  };
  return spec;
}

}  // namespace skippr
