#include "clients/azure/azure_credentials.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <strings.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>

#include "core/redact.h"

namespace skippr {
namespace {

bool same(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string lower(std::string text) {
  std::ranges::transform(text, text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return std::string(text);
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty() || text.size() % 4 != 0) return std::nullopt;
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t size = static_cast<size_t>(n);
  for (size_t i = text.size(); i > 0 && text[i - 1] == '='; --i) --size;
  out.resize(size);
  return out;
}

}  // namespace

std::string azure_base64(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {

// RFC 1123 in English whatever the locale, as x-ms-date wants it.
std::string http_date() {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const std::time_t now = std::time(nullptr);
  std::tm t{};
  gmtime_r(&now, &t);
  return fmt::format("{}, {:02d} {} {} {:02d}:{:02d}:{:02d} GMT", kDays[t.tm_wday], t.tm_mday, kMonths[t.tm_mon],
                     t.tm_year + 1900, t.tm_hour, t.tm_min, t.tm_sec);
}

// "scheme://host[:port]" and the path after it ("" or "/...").
std::pair<std::string, std::string> split_url(const std::string& url) {
  const size_t host = url.find("://");
  const size_t slash = host == std::string::npos ? std::string::npos : url.find('/', host + 3);
  if (slash == std::string::npos) return {url, ""};
  return {url.substr(0, slash), url.substr(slash)};
}

bool is_ip_host(const std::string& origin) {
  std::string host = origin.substr(origin.find("://") + 3);
  if (host.starts_with('[')) return true;  // IPv6
  host = host.substr(0, host.find(':'));
  return host == "localhost" || (!host.empty() && host.find_first_not_of("0123456789.") == std::string::npos);
}

std::string sas_signature(std::string_view sas) {
  for (size_t start = 0; start < sas.size();) {
    const size_t end = std::min(sas.find('&', start), sas.size());
    const std::string_view part = sas.substr(start, end - start);
    if (part.starts_with("sig=")) return std::string(part.substr(4));
    start = end + 1;
  }
  return "";
}

// The fields of a connection string, keys as written (compared case-insensitively). Values may contain '=' (base64).
std::map<std::string, std::string> connection_fields(std::string_view text) {
  std::map<std::string, std::string> fields;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string_view part = text.substr(start, end - start);
    if (const size_t eq = part.find('='); eq != std::string_view::npos) {
      fields[lower(trim(part.substr(0, eq)))] = trim(part.substr(eq + 1));
    }
    start = end + 1;
  }
  return fields;
}

struct Given {
  std::string key, sas, endpoint, account, source;
};

Result<Given> read_connection_string(const std::string& text, std::string_view where) {
  auto fields = connection_fields(text);
  Given g;
  g.source = "connection_string";
  g.account = fields["accountname"];
  g.key = fields["accountkey"];
  g.sas = fields["sharedaccesssignature"];
  g.endpoint = fields["blobendpoint"];
  if (g.key.empty() == g.sas.empty()) {
    return fail(ErrorKind::kConfig, fmt::format("{}: connection_string must hold either AccountKey or "
                                                "SharedAccessSignature (the string is not shown)",
                                                where));
  }
  if (g.endpoint.empty() && !g.account.empty()) {
    const std::string protocol =
        fields["defaultendpointsprotocol"].empty() ? "https" : fields["defaultendpointsprotocol"];
    const std::string suffix = fields["endpointsuffix"].empty() ? "core.windows.net" : fields["endpointsuffix"];
    g.endpoint = fmt::format("{}://{}.blob.{}", protocol, g.account, suffix);
  }
  return g;
}

// What was given explicitly, else what the environment holds (the variables the az CLI reads).
Result<Given> given_credentials(const AzureOptions& o, std::string_view where) {
  const int explicit_count = !o.account_key.empty() + !o.sas_token.empty() + !o.connection_string.empty();
  if (explicit_count > 1) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: give one of account_key, sas_token and connection_string, not several", where));
  }
  if (!o.connection_string.empty()) return read_connection_string(o.connection_string, where);
  if (!o.account_key.empty()) return Given{o.account_key, "", "", "", "account_key"};
  if (!o.sas_token.empty()) return Given{"", o.sas_token, "", "", "sas_token"};
  auto env = [](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value ? value : "");
  };
  if (const std::string cs = env("AZURE_STORAGE_CONNECTION_STRING"); !cs.empty()) {
    auto g = read_connection_string(cs, where);
    if (g) g->source = "AZURE_STORAGE_CONNECTION_STRING";
    return g;
  }
  if (const std::string key = env("AZURE_STORAGE_KEY"); !key.empty())
    return Given{key, "", "", "", "AZURE_STORAGE_KEY"};
  if (const std::string sas = env("AZURE_STORAGE_SAS_TOKEN"); !sas.empty()) {
    return Given{"", sas, "", "", "AZURE_STORAGE_SAS_TOKEN"};
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: no Azure credentials: give account_key, sas_token or connection_string (use ${{VAR}}), "
                          "or set AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or AZURE_STORAGE_SAS_TOKEN",
                          where));
}

std::string header_value(const AzureRequest& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (same(n, name)) return v;
  }
  return "";
}

std::string query_string(const AzureRequest& r) {
  std::string out;
  for (const auto& [name, value] : r.query) {
    out += (out.empty() ? "" : "&") + url_encode(name) + "=" + url_encode(value);
  }
  return out;
}

}  // namespace

Result<AzureAccount> resolve_azure_account(const AzureOptions& options, std::string_view where) {
  auto given = given_credentials(options, where);
  if (!given) return std::unexpected(given.error());
  AzureAccount a;
  a.name = options.account.empty() ? given->account : options.account;
  if (a.name.empty()) return fail(ErrorKind::kConfig, fmt::format("{}: account is required", where));
  if (!given->account.empty() && given->account != a.name) {
    return fail(ErrorKind::kConfig, fmt::format("{}: account '{}' differs from the connection string's AccountName "
                                                "'{}'",
                                                where, a.name, given->account));
  }
  a.source = given->source;
  if (!given->key.empty()) {
    auto key = base64_decode(given->key);
    if (!key) {
      return fail(
          ErrorKind::kConfig,
          fmt::format("{}: the account key from {} is not base64 (copy it as the portal shows it)", where, a.source));
    }
    a.key = std::move(*key);
    a.secrets.push_back(given->key);
  } else {
    a.sas = given->sas.starts_with('?') ? given->sas.substr(1) : given->sas;
    a.secrets.push_back(a.sas);
    if (const std::string sig = sas_signature(a.sas); !sig.empty()) {
      a.secrets.push_back(sig);
      a.secrets.push_back(percent_decode(sig));
    }
  }
  std::string endpoint = !options.endpoint.empty()  ? options.endpoint
                         : !given->endpoint.empty() ? given->endpoint
                                                    : fmt::format("https://{}.blob.core.windows.net", a.name);
  while (endpoint.ends_with('/')) endpoint.pop_back();
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://")) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: endpoint '{}' must start with http:// or https://", where, endpoint));
  }
  auto [origin, path] = split_url(endpoint);
  if (path.empty() && is_ip_host(origin)) endpoint += "/" + a.name;  // path-style: the account is the first segment
  a.endpoint = std::move(endpoint);
  return a;
}

std::string azure_string_to_sign(const AzureAccount& account, const AzureRequest& r, const std::string& url_path) {
  std::string out = r.method + "\n";
  for (const char* name : {"Content-Encoding", "Content-Language"}) out += header_value(r, name) + "\n";
  out += (r.body.empty() ? std::string() : std::to_string(r.body.size())) + "\n";  // empty for 0 since 2015-02-21
  for (const char* name : {"Content-MD5", "Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
                           "If-Unmodified-Since", "Range"}) {
    out += header_value(r, name) + "\n";
  }
  std::map<std::string, std::string> ms;
  for (const auto& [name, value] : r.headers) {
    if (const std::string n = lower(name); n.starts_with("x-ms-")) ms[n] = trim(value);
  }
  for (const auto& [name, value] : ms) out += name + ":" + value + "\n";
  out += "/" + account.name + url_path;
  std::map<std::string, std::vector<std::string>> params;
  for (const auto& [name, value] : r.query) params[lower(name)].push_back(value);
  for (auto& [name, values] : params) {
    std::ranges::sort(values);
    std::string joined;
    for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
    out += "\n" + name + ":" + joined;
  }
  return out;
}

std::string azure_public_url(const AzureAccount& account, const AzureRequest& request) {
  return account.endpoint + request.path;
}

HttpRequest azure_authorize(const AzureAccount& account, const AzureRequest& request) {
  AzureRequest r = request;
  r.headers.emplace_back("x-ms-date", http_date());
  r.headers.emplace_back("x-ms-version", kAzureStorageVersion);
  // http_send and curl would otherwise add a Content-Type the signature did not cover (octet-stream for a body,
  // a form type for an empty PUT): the type is always decided, and signed, here.
  const bool typed = !header_value(r, "Content-Type").empty();
  if (!typed && !r.body.empty()) r.headers.emplace_back("Content-Type", "application/octet-stream");
  HttpRequest h;
  h.method = r.method;
  h.body = r.body;
  for (const auto& [name, value] : r.headers) h.headers.push_back(name + ": " + value);
  if (!typed && r.body.empty()) h.headers.push_back("Content-Type:");  // "Name:" tells curl to send none
  const auto [origin, base_path] = split_url(account.endpoint);
  const std::string url_path = base_path + r.path;
  std::string query = query_string(r);
  if (account.key.empty()) {
    query += (query.empty() ? "" : "&") + account.sas;
  } else {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    const std::string text = azure_string_to_sign(account, r, url_path);
    HMAC(EVP_sha256(), account.key.data(), static_cast<int>(account.key.size()),
         reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac, &length);
    h.headers.push_back(fmt::format("Authorization: SharedKey {}:{}", account.name,
                                    azure_base64(std::string_view(reinterpret_cast<char*>(mac), length))));
  }
  h.url = origin + url_path + (query.empty() ? "" : "?" + query);
  return h;
}

}  // namespace skippr
