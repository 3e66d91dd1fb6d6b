// Test support: keys and certificates made with the openssl CLI, for emulators that check signatures and servers
// that speak TLS.
#pragma once

#include <filesystem>
#include <string>

namespace skippr::test {

// A new 2048-bit RSA key in `dir`: <name>.pem (PKCS#8, as Google's and Snowflake's key files hold it) and its public
// half <name>.pub. Returns the private key's PEM text.
std::string make_rsa_key(const std::filesystem::path& dir, const std::string& name);

// A throwaway CA and a server certificate it signed for `localhost` and 127.0.0.1, valid for two days.
struct TlsFiles {
  std::filesystem::path ca;    // the CA certificate a client trusts
  std::filesystem::path cert;  // the server's certificate
  std::filesystem::path key;   // the server's private key
};
TlsFiles make_tls_files(const std::filesystem::path& dir);

}  // namespace skippr::test
