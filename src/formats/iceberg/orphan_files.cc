#include "formats/iceberg/orphan_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "formats/iceberg/manifests.h"
#include "formats/iceberg/summary_ledger.h"

namespace skippr {
namespace {

bool all_of(std::string_view text, int (*is)(int)) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [is](char c) { return is(static_cast<unsigned char>(c)); });
}

std::optional<uint64_t> number(std::string_view digits) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// Cuts the last "-<token>" off `rest`.
std::optional<std::string_view> last_token(std::string_view& rest) {
  const auto dash = rest.rfind('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view token = rest.substr(dash + 1);
  rest = rest.substr(0, dash);
  return token;
}

// The table-relative path of a location the metadata names, or nullopt when it is outside the table.
std::optional<std::string> relative_to(const std::string& root, const std::string& location) {
  if (!location.starts_with(root)) return std::nullopt;
  return location.substr(root.size());
}

// `location`'s content; an error when it is outside the table or missing: a sweep that cannot read every manifest
// cannot tell which files are named, so it removes nothing.
Result<std::string> read_named(TableStore& store, const std::string& root, const std::string& location) {
  const auto path = relative_to(root, location);
  if (!path) return fail(ErrorKind::kBadInput, fmt::format("{} is outside the table's location {}", location, root));
  auto bytes = store.read(*path);
  if (!bytes) return std::unexpected(bytes.error());
  if (!*bytes) return fail(ErrorKind::kCorruption, fmt::format("{} is missing", location));
  return std::move(**bytes);
}

// Every data file the snapshots of `metadata` name (each manifest read once: snapshots share most of them).
Result<std::set<std::string>> named_data_files(TableStore& store, const nlohmann::json& metadata) {
  const std::string root = store.uri("");
  std::set<std::string> manifests_read, named;
  for (const auto& snapshot : metadata.value("snapshots", nlohmann::json::array())) {
    auto list = read_named(store, root, snapshot.value("manifest-list", std::string()));
    if (!list) return std::unexpected(list.error());
    auto manifests = read_manifest_list(*list);
    if (!manifests) return std::unexpected(manifests.error());
    for (const auto& m : *manifests) {
      if (!manifests_read.insert(m.path).second) continue;
      auto bytes = read_named(store, root, m.path);
      if (!bytes) return std::unexpected(bytes.error());
      auto entries = read_manifest(*bytes);
      if (!entries) return std::unexpected(entries.error());
      for (const auto& e : *entries) {
        // A file named outside the table (a table copied elsewhere): which of ours are named cannot be told.
        auto file = relative_to(root, e.file.path);
        if (!file) {
          return fail(ErrorKind::kBadInput, fmt::format("{} is outside the table's location {}", e.file.path, root));
        }
        named.insert(std::move(*file));
      }
    }
  }
  return named;
}

}  // namespace

std::optional<BatchId> batch_of_data_file(std::string_view name) {
  constexpr std::string_view kExtension = ".parquet";
  if (!name.ends_with(kExtension)) return std::nullopt;
  std::string_view rest = name.substr(0, name.size() - kExtension.size());
  const auto random = last_token(rest);
  const auto seq = last_token(rest);
  if (!random || random->size() != 8 || !all_of(*random, std::isxdigit)) return std::nullopt;
  if (!seq || seq->size() != 20 || !all_of(*seq, std::isdigit)) return std::nullopt;
  BatchId id;
  auto token = last_token(rest);
  if (token && token->size() == 32 && all_of(*token, std::isxdigit)) {
    id.lineage = std::string(*token);
    token = last_token(rest);
  }
  if (!token || token->size() < 6 || !all_of(*token, std::isdigit) || rest.empty()) return std::nullopt;
  const auto epoch = number(*token);
  const auto sequence = number(*seq);
  if (!epoch || !sequence) return std::nullopt;
  id.pipeline = std::string(rest);
  id.epoch = *epoch;
  id.seq = *sequence;
  return id;
}

Result<int> sweep_orphan_data_files(TableStore& store, const nlohmann::json& metadata) {
  auto ledger = SummaryLedger::of_table(metadata);
  if (!ledger) return std::unexpected(ledger.error());
  auto files = store.list("data");
  if (!files) return std::unexpected(files.error());
  std::optional<std::set<std::string>> named;  // read only when a candidate is found
  int removed = 0;
  for (const auto& file : *files) {
    const auto id = batch_of_data_file(std::filesystem::path(file).filename().string());
    if (!id || !ledger->has(*id)) continue;
    if (!named) {
      auto read = named_data_files(store, metadata);
      if (!read) return std::unexpected(read.error());
      named = std::move(*read);
    }
    if (named->contains(file)) continue;
    SKIPPR_TRY(store.remove(file));
    ++removed;
  }
  return removed;
}

}  // namespace skippr
