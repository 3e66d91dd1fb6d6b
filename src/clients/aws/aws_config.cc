#include "clients/aws/aws_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "clients/aws/aws_xml.h"
#include "clients/aws/renewing_credentials.h"
#include "clients/http/http_request.h"
#include "core/time_util.h"

namespace skippr {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string trim(std::string s) {
  auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  s.erase(s.begin(), std::find_if_not(s.begin(), s.end(), space));
  s.erase(std::find_if_not(s.rbegin(), s.rend(), space).base(), s.end());
  return s;
}

// The [profile] section of the shared credentials file (an INI file: `key = value` lines).
std::optional<AwsCredentials> from_credentials_file() {
  std::filesystem::path file = env("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty()) {
    const std::string home = env("HOME");
    if (home.empty()) return std::nullopt;
    file = std::filesystem::path(home) / ".aws" / "credentials";
  }
  std::ifstream in(file);
  if (!in) return std::nullopt;
  const std::string profile = env("AWS_PROFILE").empty() ? "default" : env("AWS_PROFILE");
  AwsCredentials c;
  c.source = fmt::format("profile {} of {}", profile, file.string());
  bool in_profile = false;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      in_profile = line == "[" + profile + "]";
      continue;
    }
    const size_t eq = line.find('=');
    if (!in_profile || eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::nullopt;
  return c;
}

// "2026-12-06T19:00:00Z" as temporary credentials carry their expiry; the epoch when absent or unreadable (they are
// then used as they are, as the SDKs do).
std::chrono::system_clock::time_point expiration_of(const std::string& text) {
  const auto micros = parse_iso8601_micros(text);
  return micros ? std::chrono::system_clock::time_point(std::chrono::microseconds(*micros))
                : std::chrono::system_clock::time_point{};
}

std::optional<AwsCredentials> from_json(const std::string& body, std::string source) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  AwsCredentials c;
  c.access_key_id = j.value("AccessKeyId", std::string());
  c.secret_access_key = j.value("SecretAccessKey", std::string());
  c.session_token = j.value("Token", std::string());
  c.expiration = expiration_of(j.value("Expiration", std::string()));
  c.source = std::move(source);
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::nullopt;
  return c;
}

// ECS/EKS container credentials: a full URI (with an optional authorization token) or a path on 169.254.170.2.
std::optional<AwsCredentials> from_container() {
  std::string url = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (url.empty() && !env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").empty()) {
    url = "http://169.254.170.2" + env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  }
  if (url.empty()) return std::nullopt;
  HttpRequest request;
  request.url = url;
  request.timeout_seconds = 2;
  if (const std::string token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN"); !token.empty()) {
    request.headers.push_back("Authorization: " + token);
  }
  auto response = http_send(request);
  if (!response || response->status != 200) return std::nullopt;
  return from_json(response->body, "the container credentials endpoint");
}

// EC2 instance metadata (IMDSv2: a session token first). Off EC2 nothing answers: a short timeout keeps it cheap.
std::optional<AwsCredentials> from_instance_metadata() {
  if (env("AWS_EC2_METADATA_DISABLED") == "true") return std::nullopt;
  const std::string base = "http://169.254.169.254/latest";
  HttpRequest token_request;
  token_request.method = "PUT";
  token_request.url = base + "/api/token";
  token_request.headers = {"X-aws-ec2-metadata-token-ttl-seconds: 300"};
  token_request.timeout_seconds = token_request.connect_timeout_seconds = 1;
  auto token = http_send(token_request);
  if (!token || token->status != 200) return std::nullopt;
  HttpRequest request;
  request.url = base + "/meta-data/iam/security-credentials/";
  request.headers = {"X-aws-ec2-metadata-token: " + token->body};
  request.timeout_seconds = 2;
  auto role = http_send(request);
  if (!role || role->status != 200 || role->body.empty()) return std::nullopt;
  request.url += trim(role->body);
  auto creds = http_send(request);
  if (!creds || creds->status != 200) return std::nullopt;
  return from_json(creds->body, "the instance metadata service");
}

std::string service_endpoint_variable(std::string_view service);

// EKS/IRSA-style web identity: a token file and a role, exchanged at STS (AssumeRoleWithWebIdentity, which needs no
// signature) for temporary credentials.
std::optional<AwsCredentials> from_web_identity(const std::string& region) {
  const std::string token_file = env("AWS_WEB_IDENTITY_TOKEN_FILE"), role = env("AWS_ROLE_ARN");
  if (token_file.empty() || role.empty()) return std::nullopt;
  std::ifstream in(token_file);
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  token = trim(token);
  if (token.empty()) return std::nullopt;
  std::string endpoint = env(service_endpoint_variable("sts").c_str());
  if (endpoint.empty()) endpoint = env("AWS_ENDPOINT_URL");
  if (endpoint.empty()) endpoint = fmt::format("https://sts.{}.amazonaws.com", region);
  const std::string session = env("AWS_ROLE_SESSION_NAME").empty() ? "skipprd" : env("AWS_ROLE_SESSION_NAME");
  const std::string form = fmt::format(
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn={}&RoleSessionName={}&WebIdentityToken={}",
      url_encode(role), url_encode(session), url_encode(token));
  HttpRequest request;
  request.method = "POST";
  request.url = endpoint + "/";
  request.body = form;
  request.headers = {"Content-Type: application/x-www-form-urlencoded"};
  request.timeout_seconds = 10;
  auto response = http_send(request);
  if (!response || response->status != 200) return std::nullopt;
  AwsCredentials c;
  c.access_key_id = aws_xml_text(response->body, "AccessKeyId");
  c.secret_access_key = aws_xml_text(response->body, "SecretAccessKey");
  c.session_token = aws_xml_text(response->body, "SessionToken");
  c.expiration = expiration_of(aws_xml_text(response->body, "Expiration"));
  c.source = fmt::format("web identity (role {})", role);
  if (c.access_key_id.empty() || c.secret_access_key.empty()) return std::nullopt;
  return c;
}

std::string service_endpoint_variable(std::string_view service) {
  std::string name = "AWS_ENDPOINT_URL_";
  for (char c : service) name.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  return name;
}

// Temporary credentials from `fetch`, renewed from there by one object per origin for the whole process: a client
// after the first takes that object's, without asking the endpoint again. False when `fetch` finds none.
bool temporary_from(AwsService& s, const std::string& origin, std::function<std::optional<AwsCredentials>()> fetch) {
  if (auto shared = existing_renewing_credentials(origin)) {
    s.credentials.source = shared->source();
    s.renewing = std::move(shared);
    return true;
  }
  auto first = fetch();
  if (!first) return false;
  s.credentials = std::move(*first);
  if (s.credentials.expiration == std::chrono::system_clock::time_point{}) return true;  // they do not expire
  s.renewing = shared_renewing_credentials(origin, s.credentials, std::move(fetch));
  return true;
}

}  // namespace

std::string AwsService::sigv4(std::string_view service) const { return fmt::format("aws:amz:{}:{}", region, service); }

Result<AwsCredentials> AwsService::current_credentials() const {
  if (!renewing) return credentials;
  return renewing->current();
}

Result<AwsService> resolve_aws_service(const AwsOptions& options, std::string_view service, std::string_view where) {
  AwsService s;
  s.region = !options.region.empty()              ? options.region
             : !env("AWS_REGION").empty()         ? env("AWS_REGION")
             : !env("AWS_DEFAULT_REGION").empty() ? env("AWS_DEFAULT_REGION")
                                                  : "us-east-1";
  s.endpoint = options.endpoint;
  if (s.endpoint.empty()) s.endpoint = env(service_endpoint_variable(service).c_str());
  if (s.endpoint.empty()) s.endpoint = env("AWS_ENDPOINT_URL");
  s.custom_endpoint = !s.endpoint.empty();
  if (s.endpoint.empty()) s.endpoint = fmt::format("https://{}.{}.amazonaws.com", service, s.region);
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  if (s.endpoint.find("://") == std::string::npos) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: endpoint '{}' needs a scheme, e.g. http://127.0.0.1:9000", where, s.endpoint));
  }

  if (options.access_key_id.empty() != options.secret_access_key.empty()) {
    return fail(ErrorKind::kConfig,
                fmt::format("{}: give both access_key_id and secret_access_key, or neither (then the AWS credential "
                            "chain is used)",
                            where));
  }
  if (!options.access_key_id.empty()) {
    s.credentials = {options.access_key_id, options.secret_access_key, "", "the connector's parameters"};
    return s;
  }
  if (!env("AWS_ACCESS_KEY_ID").empty() && !env("AWS_SECRET_ACCESS_KEY").empty()) {
    s.credentials = {env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"), "environment"};
    return s;
  }
  const std::string region = s.region;
  if (!env("AWS_WEB_IDENTITY_TOKEN_FILE").empty() && !env("AWS_ROLE_ARN").empty() &&
      temporary_from(s, "web identity " + env("AWS_ROLE_ARN") + " " + env("AWS_WEB_IDENTITY_TOKEN_FILE") + " " + region,
                     [region] { return from_web_identity(region); })) {
    return s;
  }
  if (auto c = from_credentials_file()) {
    s.credentials = std::move(*c);
    return s;
  }
  const std::string container =
      env("AWS_CONTAINER_CREDENTIALS_FULL_URI") + env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  if (!container.empty() && temporary_from(s, "container " + container, from_container)) return s;
  if (temporary_from(s, "instance metadata", from_instance_metadata)) return s;
  return fail(ErrorKind::kConfig,
              fmt::format("{}: no AWS credentials found (looked at the parameters, AWS_ACCESS_KEY_ID and "
                          "AWS_SECRET_ACCESS_KEY, AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, ~/.aws/credentials or "
                          "AWS_SHARED_CREDENTIALS_FILE with AWS_PROFILE, the container and the instance metadata "
                          "endpoints); set one of them",
                          where));
}

}  // namespace skippr
