#include "clients/aws/glue_client.h"

#include <fmt/format.h>

#include "clients/aws/aws_json.h"

namespace skippr {
namespace {

constexpr AwsJsonApi kGlue = {"Glue", "glue", "AWSGlue", "application/x-amz-json-1.1"};

}  // namespace

Status check_glue_name(std::string_view where, const std::string& name) {
  if (!name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos) {
    return ok();
  }
  return fail(ErrorKind::kConfig,
              fmt::format("{}: '{}' is not a Glue name (lower-case letters, digits and underscores)", where, name));
}

Status GlueClient::ensure_database(const std::string& database) {
  auto got = aws_json_call(service_, kGlue, "GetDatabase", {{"Name", database}}, true, {"EntityNotFoundException"});
  if (!got) return std::unexpected(got.error());
  if (got->error_type.empty()) return ok();
  auto created = aws_json_call(service_, kGlue, "CreateDatabase", {{"DatabaseInput", {{"Name", database}}}}, false,
                               {"AlreadyExistsException"});
  if (!created) return std::unexpected(created.error());
  return ok();
}

Result<std::optional<nlohmann::json>> GlueClient::get_table(const std::string& database, const std::string& table) {
  auto got = aws_json_call(service_, kGlue, "GetTable", {{"DatabaseName", database}, {"Name", table}}, true,
                           {"EntityNotFoundException"});
  if (!got) return std::unexpected(got.error());
  if (!got->error_type.empty()) return std::optional<nlohmann::json>();
  return std::optional<nlohmann::json>(got->body.value("Table", nlohmann::json::object()));
}

Result<GlueWrite> GlueClient::create_table(const std::string& database, const nlohmann::json& table_input) {
  auto created =
      aws_json_call(service_, kGlue, "CreateTable", {{"DatabaseName", database}, {"TableInput", table_input}}, false,
                    {"AlreadyExistsException"});
  if (!created) return std::unexpected(created.error());
  return created->error_type.empty() ? GlueWrite::kApplied : GlueWrite::kAlreadyExists;
}

Result<GlueWrite> GlueClient::update_table(const std::string& database, const nlohmann::json& table_input,
                                           const std::string& version_id) {
  nlohmann::json request = {{"DatabaseName", database}, {"TableInput", table_input}};
  if (!version_id.empty()) request["VersionId"] = version_id;
  auto updated = aws_json_call(service_, kGlue, "UpdateTable", request, false, {"ConcurrentModificationException"});
  if (!updated) return std::unexpected(updated.error());
  return updated->error_type.empty() ? GlueWrite::kApplied : GlueWrite::kConflict;
}

Status GlueClient::create_partitions(const std::string& database, const std::string& table,
                                     const std::vector<nlohmann::json>& partitions) {
  for (size_t first = 0; first < partitions.size(); first += 100) {
    nlohmann::json inputs = nlohmann::json::array();
    for (size_t i = first; i < std::min(partitions.size(), first + 100); ++i) inputs.push_back(partitions[i]);
    auto created =
        aws_json_call(service_, kGlue, "BatchCreatePartition",
                      {{"DatabaseName", database}, {"TableName", table}, {"PartitionInputList", inputs}}, false);
    if (!created) return std::unexpected(created.error());
    // Errors come per partition; a partition that exists is what a replay meets.
    for (const auto& e : created->body.value("Errors", nlohmann::json::array())) {
      const auto detail = e.value("ErrorDetail", nlohmann::json::object());
      const std::string code = detail.value("ErrorCode", std::string());
      if (code == "AlreadyExistsException") continue;
      return fail(code.find("Throttl") != std::string::npos ? ErrorKind::kUnavailable : ErrorKind::kConfig,
                  fmt::format("Glue BatchCreatePartition on {}.{}: {}: {}", database, table, code,
                              detail.value("ErrorMessage", std::string())));
    }
  }
  return ok();
}

Result<std::vector<nlohmann::json>> GlueClient::get_partitions(const std::string& database, const std::string& table) {
  std::vector<nlohmann::json> out;
  std::string token;
  do {
    nlohmann::json request = {{"DatabaseName", database}, {"TableName", table}};
    if (!token.empty()) request["NextToken"] = token;
    auto page = aws_json_call(service_, kGlue, "GetPartitions", request, true);
    if (!page) return std::unexpected(page.error());
    for (auto& p : page->body.value("Partitions", nlohmann::json::array())) out.push_back(std::move(p));
    token = page->body.value("NextToken", std::string());
  } while (!token.empty());
  return out;
}

}  // namespace skippr
