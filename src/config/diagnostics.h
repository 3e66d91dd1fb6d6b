// Collects every configuration problem with its position, so the user fixes them all in one pass.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/result.h"

namespace skippr::config_detail {

class Diagnostics {
 public:
  explicit Diagnostics(std::string display_file) : file_(std::move(display_file)) {}

  // `at` is yaml-cpp's 0-based mark; a null mark (a node that was never in the file) falls back to 1:1.
  void add(const YAML::Mark& at, std::string message);
  void add(int line, int column, std::string message);  // 1-based
  void add(SourceLocation where, std::string message);  // e.g. in .env rather than the config file

  SourceLocation location(const YAML::Mark& at) const;
  bool empty() const { return problems_.empty(); }

  // One kConfig error, one line per problem in file order: "<file>:<line>:<column>: <message>".
  Error to_error() const;

 private:
  struct Problem {
    SourceLocation where;
    std::string message;
  };
  std::string file_;
  std::vector<Problem> problems_;
};

}  // namespace skippr::config_detail
