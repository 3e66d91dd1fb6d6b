#include "sinks/databricks/landing_file.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <nlohmann/json.hpp>

namespace skippr {
namespace {

nlohmann::json unsigned_json(const LandingFile& l) {
  nlohmann::json json = {{"batch_id", l.batch_id},
                         {"landed_sql", l.landed_sql},
                         {"statements", l.statements},
                         {"files", l.files},
                         {"rejected", l.rejected}};
  // Only when there is one, so a file written before streams is signed over what it holds.
  if (!l.rejected_by_part.empty()) json["rejected_by_part"] = l.rejected_by_part;
  return json;
}

std::string signature(const nlohmann::json& content, std::string_view key) {
  const std::string text = content.dump();  // keys sorted: the same content gives the same text
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(text.data()),
       text.size(), mac, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", mac[i]);
  return hex;
}

}  // namespace

std::string landing_file_json(const LandingFile& landing, std::string_view signing_key) {
  nlohmann::json json = unsigned_json(landing);
  json["signature"] = signature(json, signing_key);
  return json.dump();
}

Result<LandingFile> parse_landing_file(std::string_view text, std::string_view signing_key, std::string_view where) {
  const auto json = nlohmann::json::parse(text, nullptr, false);
  const auto not_ours = [&](std::string_view why) {
    return fail(ErrorKind::kConfig,
                fmt::format("{} {}; if it is not skipprd's, move it out of the folder", where, why));
  };
  if (!json.is_object() || !json.contains("statements") || !json.contains("files") || !json.contains("signature")) {
    return not_ours("is not a landing file skipprd wrote");
  }
  LandingFile l;
  try {
    l.batch_id = json.value("batch_id", "");
    l.landed_sql = json.value("landed_sql", "");
    l.statements = json["statements"].get<std::vector<std::string>>();
    l.files = json["files"].get<std::vector<std::string>>();
    l.rejected = json.value("rejected", uint64_t{0});
    if (json.contains("rejected_by_part")) l.rejected_by_part = json["rejected_by_part"].get<std::vector<uint64_t>>();
  } catch (const nlohmann::json::exception&) {
    return not_ours("is not a landing file skipprd wrote");
  }
  const std::string want = signature(unsigned_json(l), signing_key);
  const std::string got = json.value("signature", "");
  if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
    return not_ours(
        "is not signed with this sink's token (written with another token before it was rotated, or by someone "
        "else): it is not run");
  }
  return l;
}

}  // namespace skippr
