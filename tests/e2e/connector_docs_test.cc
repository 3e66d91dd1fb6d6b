// The connector pages (docs/connectors/<Type>.md) against the binary: every connector of the registry has a page,
// and each page's parameter table is the one `skipprd connectors --markdown` prints from the connector's own spec.
// Regenerate the tables with `python3 scripts/gen-connector-docs.py`.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "support/process.h"

namespace skippr::test {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = SKIPPR_SOURCE_DIR;
const char kEnd[] = "<!-- params:end -->\n";

struct Block {
  std::string type_name;
  std::string kind;  // source | sink
  std::string text;  // from the begin marker through the end marker's newline
};

std::vector<Block> blocks_in(const std::string& text) {
  static const std::regex begin(R"(<!-- params:begin (\S+) (source|sink) -->\n)");
  std::vector<Block> blocks;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), begin); it != std::sregex_iterator(); ++it) {
    const size_t start = static_cast<size_t>(it->position(0));
    const size_t end = text.find(kEnd, start);
    blocks.push_back(
        {(*it)[1].str(), (*it)[2].str(),
         end == std::string::npos ? text.substr(start) : text.substr(start, end + sizeof(kEnd) - 1 - start)});
  }
  return blocks;
}

std::vector<Block> printed_blocks() {
  TempDir dir;
  const auto r = run_process({SKIPPRD_BINARY, "connectors", "--markdown"}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return blocks_in(r.out);
}

TEST(ConnectorDocs, TheBinaryPrintsOneParameterBlockPerConnector) {
  TempDir dir;
  const auto table = run_process({SKIPPRD_BINARY, "connectors"}, dir.path());
  ASSERT_EQ(table.exit_code, 0) << table.err;
  const auto blocks = printed_blocks();
  ASSERT_FALSE(blocks.empty());
  std::set<std::string> seen;
  for (const auto& b : blocks) {
    EXPECT_TRUE(seen.insert(b.type_name + " " + b.kind).second) << b.type_name << " " << b.kind << " twice";
    EXPECT_NE(table.out.find(b.type_name), std::string::npos) << b.type_name;
    EXPECT_TRUE(b.text.ends_with(kEnd)) << b.text;
  }
  // One block per row of the plain table (each row starts with its kind).
  size_t rows = 0;
  for (size_t at = 0; at < table.out.size(); at = table.out.find('\n', at) + 1) {
    if (table.out.compare(at, 7, "source ") == 0 || table.out.compare(at, 5, "sink ") == 0) ++rows;
    if (table.out.find('\n', at) == std::string::npos) break;
  }
  EXPECT_EQ(blocks.size(), rows) << table.out;
  // A required parameter reads "yes"; a default is shown as it would be written in skippr.yml.
  std::string duckdb;
  for (const auto& b : blocks) {
    if (b.type_name == "DuckDB" && b.kind == "sink") duckdb = b.text;
  }
  EXPECT_NE(duckdb.find("| `path` | path | yes |  |"), std::string::npos) << duckdb;
  EXPECT_NE(duckdb.find("| `max_memory_bytes` | integer | no | `4294967296` |"), std::string::npos) << duckdb;
}

TEST(ConnectorDocs, EveryConnectorHasAPageWhoseParameterTableIsTheBinarys) {
  std::set<std::string> printed;
  for (const auto& b : printed_blocks()) {
    printed.insert(b.type_name + " " + b.kind);
    const fs::path page = kRepo / "docs" / "connectors" / (b.type_name + ".md");
    ASSERT_TRUE(fs::exists(page)) << b.type_name << " (" << b.kind << ") has no page " << page
                                  << ": run python3 scripts/gen-connector-docs.py and fill it in";
    const auto in_page = blocks_in(read_text(page));
    const Block* found = nullptr;
    for (const auto& p : in_page) {
      if (p.type_name == b.type_name && p.kind == b.kind) found = &p;
    }
    ASSERT_NE(found, nullptr) << page << " has no " << b.kind << " parameter block";
    EXPECT_EQ(found->text, b.text) << page << ": the " << b.kind
                                   << " parameters differ from the binary's; run python3 scripts/gen-connector-docs.py";
  }
  // And no page documents a connector this build does not have.
  for (const auto& entry : fs::directory_iterator(kRepo / "docs" / "connectors")) {
    if (entry.path().extension() != ".md") continue;
    for (const auto& p : blocks_in(read_text(entry.path()))) {
      EXPECT_TRUE(printed.contains(p.type_name + " " + p.kind))
          << entry.path() << " documents " << p.type_name << " " << p.kind << ", which the registry does not have";
    }
  }
}

// The anchors GitHub makes of a Markdown file's headings: lower case, spaces to '-', other punctuation dropped.
std::set<std::string> anchors_of(const std::string& text) {
  std::set<std::string> anchors;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const size_t hashes = line.find_first_not_of('#');
    if (hashes == 0 || hashes == std::string::npos || line[hashes] != ' ') continue;
    std::string slug;
    for (char c : line.substr(hashes + 1)) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        slug += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (c == ' ' || c == '-') {
        slug += '-';
      } else if (c == '_') {
        slug += '_';
      }
    }
    anchors.insert(slug);
  }
  return anchors;
}

// Every relative link of the README and the docs names a file that exists, and a heading of it when it names an
// anchor (the README was split into docs/: what pointed into it must point where the text went).
TEST(ConnectorDocs, EveryRelativeLinkOfTheDocsNamesAFileAndAHeadingThatExist) {
  static const std::regex link(R"(\]\(([^)#\s]*)(#[^)\s]*)?\))");
  std::vector<fs::path> files = {kRepo / "README.md"};
  for (const auto& entry : fs::recursive_directory_iterator(kRepo / "docs")) {
    if (entry.path().extension() == ".md") files.push_back(entry.path());
  }
  size_t checked = 0;
  for (const auto& file : files) {
    const std::string text = read_text(file);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1].str();
      const std::string anchor = (*it)[2].matched ? (*it)[2].str().substr(1) : "";
      if (target.find("://") != std::string::npos || target.starts_with("mailto:")) continue;
      const fs::path named = target.empty() ? file : file.parent_path() / target;
      ++checked;
      if (!fs::exists(named)) {
        ADD_FAILURE() << file << " links to " << target << ", which is missing";
        continue;
      }
      if (!anchor.empty() && named.extension() == ".md") {
        EXPECT_TRUE(anchors_of(read_text(named)).contains(anchor))
            << file << " links to " << target << "#" << anchor << ": no such heading";
      }
    }
  }
  EXPECT_GT(checked, 50u);
}

// Each page says what the connector promises and how it is tested.
TEST(ConnectorDocs, EveryPageHasAGuaranteeAndATestedSection) {
  for (const auto& entry : fs::directory_iterator(kRepo / "docs" / "connectors")) {
    if (entry.path().extension() != ".md") continue;
    const auto anchors = anchors_of(read_text(entry.path()));
    EXPECT_TRUE(anchors.contains("guarantee")) << entry.path() << " has no '## Guarantee'";
    EXPECT_TRUE(anchors.contains("tested")) << entry.path() << " has no '## Tested'";
  }
}

}  // namespace
}  // namespace skippr::test
