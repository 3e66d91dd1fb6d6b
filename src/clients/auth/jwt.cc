#include "clients/auth/jwt.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

namespace skippr {
namespace {

using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

std::string base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// An encrypted key would make OpenSSL's default callback prompt for a passphrase on the terminal (a daemon would
// hang): refuse to be asked.
int no_passphrase(char*, int, int, void*) { return -1; }

Result<Key> read_key(std::string_view pem, std::string_view key_source) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_passphrase, nullptr) : nullptr, EVP_PKEY_free);
  if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
    return fail(
        ErrorKind::kConfig,
        fmt::format("the private key of {} is not a PEM RSA key, or is encrypted (give it unencrypted)", key_source));
  }
  return key;
}

}  // namespace

std::string base64url(std::string_view bytes) {
  std::string out = base64(bytes);
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

Result<std::string> sign_rs256_jwt(const nlohmann::json& header, const nlohmann::json& claims,
                                   std::string_view private_key_pem, std::string_view key_source) {
  auto key = read_key(private_key_pem, key_source);
  if (!key) return std::unexpected(key.error());
  const std::string signing_input = base64url(header.dump()) + "." + base64url(claims.dump());
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const auto* input = reinterpret_cast<const unsigned char*>(signing_input.data());
  size_t length = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key->get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &length, input, signing_input.size()) != 1) {
    return fail(ErrorKind::kConfig, fmt::format("the private key of {} cannot sign", key_source));
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, input,
                     signing_input.size()) != 1) {
    return fail(ErrorKind::kConfig, fmt::format("the private key of {} cannot sign", key_source));
  }
  signature.resize(length);
  return signing_input + "." + base64url(signature);
}

Result<std::string> public_key_fingerprint(std::string_view private_key_pem, std::string_view key_source) {
  auto key = read_key(private_key_pem, key_source);
  if (!key) return std::unexpected(key.error());
  unsigned char* der = nullptr;
  const int length = i2d_PUBKEY(key->get(), &der);
  if (length <= 0) return fail(ErrorKind::kConfig, fmt::format("the key of {} has no public half", key_source));
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  EVP_Digest(der, static_cast<size_t>(length), digest, &digest_length, EVP_sha256(), nullptr);
  OPENSSL_free(der);
  return "SHA256:" + base64(std::string_view(reinterpret_cast<const char*>(digest), digest_length));
}

}  // namespace skippr
