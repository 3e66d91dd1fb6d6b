// Reading a Prometheus text exposition in tests: its samples by name and labels, and promtool's verdict on it.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace skippr::test {

// Every sample of the exposition as "name{labels}" -> value.
std::map<std::string, double> prometheus_samples(const std::string& text);

// `promtool check metrics` (Debian's prometheus package) on `text`, written to `file` first: "" when it passes,
// else what promtool said.
std::string promtool_problems(const std::filesystem::path& file, const std::string& text);

}  // namespace skippr::test
