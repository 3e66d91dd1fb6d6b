// The sink suite (tests/support/sink_suite.h) on the File sink: Parquet files in a folder of each test's own.
#include <fmt/format.h>

#include <filesystem>

#include "support/sink_suite.h"

namespace skippr::test {
namespace {

const SinkUnderTest& file_under_test() {
  static const SinkUnderTest sut = [] {
    SinkUnderTest s;
    s.name = "File";
    s.sink = [](const std::string& where) { return fmt::format(R"(File: {{ path: "{}", format: parquet }})", where); };
    s.rows = [](const PipelineFixture& f, const std::string& where, const std::vector<std::string>& columns) {
      return parquet_rows(f.path(where), columns);
    };
    s.folders = true;
    s.lands_streams = true;
    s.mistakes = {
        {"File: { path: out, format: xml }", "format", ""},
        {R"(File: { path: "out/{stream}", format: parquet })", "holds {stream}", ""},
        {"File: { format: parquet }", "path", ""},
    };
    return s;
  }();
  return sut;
}

}  // namespace

INSTANTIATE_SINK_SUITE(File, file_under_test());

}  // namespace skippr::test
