#include "support/prometheus_text.h"

#include <fmt/format.h>

#include <sstream>

#include "support/process.h"

namespace skippr::test {

std::map<std::string, double> prometheus_samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

std::string promtool_problems(const std::filesystem::path& file, const std::string& text) {
  write_text(file, text);
  auto r =
      run_process({"/bin/sh", "-c", fmt::format("promtool check metrics < '{}'", file.string())}, file.parent_path());
  return r.exit_code == 0 ? "" : r.out + r.err;
}

}  // namespace skippr::test
