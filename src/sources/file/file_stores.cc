#include "sources/file/file_stores.h"

#include <fmt/format.h>

#include "clients/aws/aws_params.h"
#include "clients/azure/azure_params.h"
#include "clients/sftp/sftp_params.h"
#include "sources/file/azure_file_store.h"
#include "sources/file/gcs_file_store.h"
#include "sources/file/s3_file_store.h"
#include "sources/file/sftp_file_store.h"

namespace skippr {

std::vector<ParamSpec> file_store_params() {
  std::vector<ParamSpec> params = aws_connection_params();
  for (auto& param : params) {
    if (param.name == "endpoint") {  // one name for every store's server
      param.doc =
          "the store's server: S3-compatible (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL), Azure's blob "
          "endpoint (default: https://<account>.blob.core.windows.net) or GCS's JSON API (default: "
          "STORAGE_EMULATOR_HOST, https://storage.googleapis.com)";
    } else {
      param.doc = "s3:// paths: " + param.doc;
    }
  }
  params.push_back({"account", ParamType::kString, false, nullptr, "az:// paths: the storage account"});
  for (auto& param : azure_credential_params()) {
    param.doc = "az:// paths: " + param.doc;
    params.push_back(std::move(param));
  }
  params.push_back({"credentials_file", ParamType::kPath, false, nullptr,
                    "gs:// paths: a service-account JSON key file (default: GOOGLE_APPLICATION_CREDENTIALS)"});
  for (auto& param : sftp_connection_params()) {
    param.doc = "sftp:// paths: " + param.doc;
    params.push_back(std::move(param));
  }
  return params;
}

bool is_remote_path(const std::string& path) { return path.find("://") != std::string::npos; }

Result<std::unique_ptr<FileStore>> remote_file_store(const std::string& path, const nlohmann::json& params,
                                                     const std::filesystem::path& cache_dir, const std::string& where) {
  if (path.starts_with("s3://")) {
    auto aws = read_aws_options(params, where);
    if (!aws) return std::unexpected(aws.error());
    return s3_file_store(path, std::move(*aws), cache_dir, where);
  }
  if (path.starts_with("az://")) return azure_file_store(path, read_azure_options(params), cache_dir, where);
  if (path.starts_with("gs://")) {
    GcsOptions gcs{params.value("credentials_file", std::string()), params.value("endpoint", std::string())};
    return gcs_file_store(path, std::move(gcs), cache_dir, where);
  }
  if (is_sftp_url(path)) {
    auto sftp = read_sftp_options(params, where);
    if (!sftp) return std::unexpected(sftp.error());
    return sftp_file_store(path, std::move(*sftp), sftp_port_given(params), cache_dir, where);
  }
  return fail(ErrorKind::kConfig, fmt::format("{}: path '{}': the URL schemes read are s3://, az://, gs:// and "
                                              "sftp:// (or give a local path)",
                                              where, path));
}

}  // namespace skippr
