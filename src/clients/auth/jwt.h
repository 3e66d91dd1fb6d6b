// RS256 JSON Web Tokens signed with OpenSSL, for the APIs that take one: Google's OAuth token endpoint (GCS,
// BigQuery, GA4) and Snowflake's key-pair authentication. Nothing here ever puts a key or a token into a message.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/result.h"

namespace skippr {

// RFC 4648 base64url without padding, as JWTs use it.
std::string base64url(std::string_view bytes);

// header.claims.signature, signed with the PEM private key (PKCS#8 or PKCS#1 RSA). kConfig saying `key_source` (never
// the key) when the key cannot be read or used.
Result<std::string> sign_rs256_jwt(const nlohmann::json& header, const nlohmann::json& claims,
                                   std::string_view private_key_pem, std::string_view key_source);

// "SHA256:" + base64 of the SHA-256 of the public key's DER SubjectPublicKeyInfo, as Snowflake names a user's key
// (DESC USER's RSA_PUBLIC_KEY_FP). kConfig as above.
Result<std::string> public_key_fingerprint(std::string_view private_key_pem, std::string_view key_source);

}  // namespace skippr
