#include "support/iceberg_reader.h"

#include <fmt/format.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "support/process.h"

namespace skippr::test {

IcebergDigest icebird_digest(const std::vector<std::string>& tables, const std::string& key_column,
                             const std::filesystem::path& s3_mirror) {
  std::string urls;
  for (const auto& t : tables) urls += (urls.empty() ? "" : ",") + t;
  const std::filesystem::path source = SKIPPR_SOURCE_DIR;
  std::vector<std::string> args = {program_path("node"), (source / "tests/support/iceberg_read.mjs").string(), urls,
                                   key_column};
  if (!s3_mirror.empty()) args.push_back(s3_mirror.string());
  auto run = run_process(args, source, {{"ICEBIRD_DIR", (source / "third_party/icebird").string()}}, 300);
  IcebergDigest d;
  if (run.exit_code != 0) {
    d.error = fmt::format("icebird exited {}: {}", run.exit_code, run.err);
    return d;
  }
  auto j = nlohmann::json::parse(run.out, nullptr, false);
  if (!j.is_object()) {
    d.error = "icebird printed no JSON: " + run.out;
    return d;
  }
  d.rows = j.value("rows", uint64_t{0});
  d.distinct_keys = j.value("distinct_keys", uint64_t{0});
  d.hash = j.value("hash", std::string());
  d.columns = j.value("columns", std::vector<std::string>{});
  d.snapshots = j.value("snapshots", 0);
  return d;
}

int iceberg_newest_version(const std::filesystem::path& table) {
  static const std::regex name(R"(v(\d+)\.metadata\.json)");
  int newest = 0;
  for (const auto& entry : std::filesystem::directory_iterator(table / "metadata")) {
    std::smatch m;
    const std::string file = entry.path().filename().string();
    if (std::regex_match(file, m, name)) newest = std::max(newest, std::stoi(m[1].str()));
  }
  return newest;
}

nlohmann::json iceberg_current_metadata(const std::filesystem::path& table) {
  std::ifstream in(table / "metadata" / fmt::format("v{}.metadata.json", iceberg_newest_version(table)));
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, false);
}

std::vector<std::string> iceberg_snapshot_batch_ids(const nlohmann::json& metadata) {
  std::vector<std::string> ids;
  for (const auto& s : metadata.value("snapshots", nlohmann::json::array())) {
    std::stringstream list(s.value("summary", nlohmann::json::object()).value("skippr.batch-ids", std::string()));
    for (std::string id; std::getline(list, id, ',');) {
      if (!id.empty()) ids.push_back(id);
    }
  }
  return ids;
}

}  // namespace skippr::test
