#include "support/stream_files.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>

namespace skippr::test {

const std::vector<std::string>& stream_names() {
  static const std::vector<std::string> names = {"orders", "users", "public.items", "events", "zz_last"};
  return names;
}

std::map<std::string, uint64_t> write_stream_files(const std::filesystem::path& root, int files, int lines) {
  std::map<std::string, uint64_t> rows;
  const auto& streams = stream_names();
  for (size_t s = 0; s < streams.size(); ++s) {
    const auto dir = root / "in" / streams[s];
    std::filesystem::create_directories(dir);
    uint64_t id = 0;
    for (int f = 0; f < files; ++f) {
      std::ofstream out(dir / fmt::format("{:03}.jsonl", f));
      for (int l = 0; l < lines; ++l, ++id) {
        std::string row = fmt::format(R"({{"id":{},"stream_no":{},"label":"{}-{}")", id, s, streams[s], id);
        if (s % 2 == 0) row += fmt::format(R"(,"amount":{}.25)", id % 977);
        if (streams[s] == "events" && f >= files / 2) row += fmt::format(R"(,"country":"c{}")", id % 7);
        out << row << "}\n";
      }
      rows[streams[s]] += static_cast<uint64_t>(lines);
    }
  }
  return rows;
}

std::string stream_table(const std::string& prefix, const std::string& stream) {
  std::string table = prefix + stream;
  for (char& c : table) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  return table;
}

}  // namespace skippr::test
