// The credential parameters every connector on Azure Storage shares (account_key, sas_token, connection_string), one
// declaration and one reading of them, so the AzureBlob sink and the File source on az:// agree.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "clients/azure/azure_credentials.h"
#include "core/connector.h"

namespace skippr {

std::vector<ParamSpec> azure_credential_params();
// account, the credentials and endpoint as given (resolve_azure_account checks them).
AzureOptions read_azure_options(const nlohmann::json& params);

}  // namespace skippr
