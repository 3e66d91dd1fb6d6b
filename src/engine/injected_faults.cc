#include "engine/injected_faults.h"

#include <cstdlib>
#include <stdexcept>

namespace skippr {
namespace {

class ThrowingSource final : public Source {
 public:
  explicit ThrowingSource(std::unique_ptr<Source> inner) : inner_(std::move(inner)) {}
  Status open() override { return inner_->open(); }
  Result<Poll> poll(const Budget&) override { throw std::runtime_error("injected fault: the source's poll threw"); }
  Status seek(const Position& position) override { return inner_->seek(position); }

 private:
  std::unique_ptr<Source> inner_;
};

}  // namespace

std::unique_ptr<Source> with_injected_faults(std::unique_ptr<Source> source, std::string_view pipeline) {
  const char* target = std::getenv("SKIPPR_TEST_THROW_IN_POLL");
  if (target == nullptr || pipeline != target) return source;
  return std::make_unique<ThrowingSource>(std::move(source));
}

}  // namespace skippr
