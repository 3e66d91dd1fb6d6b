// The connection parameters every connector on SFTP shares (port, user, private_key_file or password, known_hosts_file,
// strict_host_key_checking, timeout_seconds), one declaration and one reading of them, so the SFTP sink and the File
// source on sftp:// agree. `host` is not among them: the sink names it as a parameter, the File source in its URL.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>
#include <vector>

#include "clients/sftp/sftp_client.h"
#include "core/connector.h"
#include "core/result.h"

namespace skippr {

std::vector<ParamSpec> sftp_connection_params();
// The options as given (`host` too when the params have it; `user` may be empty: a URL may name it). kConfig naming
// `where` for a port outside 1-65535, a timeout that is not positive, or not exactly one of private_key_file and
// password. An absent port is 22.
Result<SftpOptions> read_sftp_options(const nlohmann::json& params, std::string_view where);
// Whether `port` was given (the File source's URL may name one too, and both must not disagree).
bool sftp_port_given(const nlohmann::json& params);

}  // namespace skippr
