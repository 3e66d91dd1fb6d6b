#include "clients/azure/azure_params.h"

namespace skippr {

std::vector<ParamSpec> azure_credential_params() {
  return {
      {"account_key", ParamType::kString, false, nullptr, "secret: the account key; use ${VAR}"},
      {"sas_token", ParamType::kString, false, nullptr, "secret: a SAS token (sv=...&sig=...); use ${VAR}"},
      {"connection_string", ParamType::kString, false, nullptr,
       "secret: AccountName=...;AccountKey=... or SharedAccessSignature=...;BlobEndpoint=...; use ${VAR}. Without "
       "any of the three: AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN"},
  };
}

AzureOptions read_azure_options(const nlohmann::json& params) {
  AzureOptions o;
  o.account = params.value("account", std::string());
  o.account_key = params.value("account_key", std::string());
  o.sas_token = params.value("sas_token", std::string());
  o.connection_string = params.value("connection_string", std::string());
  o.endpoint = params.value("endpoint", std::string());
  return o;
}

}  // namespace skippr
