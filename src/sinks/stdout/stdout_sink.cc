#include "sinks/stdout/stdout_sink.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "formats/json_rows.h"

namespace skippr {

namespace {

class StdoutSink final : public Sink {
 public:
  Guarantee guarantee() const override { return Guarantee::kNone; }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    buffer_.clear();
    for (size_t row = 0; row < batch.rows; ++row) {
      append_row_json(batch, row, buffer_);
      buffer_.push_back('\n');
    }
    // One flush per batch: a reader sees whole batches, and nothing waits in stdio's buffer after write returns.
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), stdout) != buffer_.size() || std::fflush(stdout) != 0) {
      return fail(ErrorKind::kUnavailable,
                  fmt::format("writing batch {} to standard output failed: {}", id.str(), std::strerror(errno)));
    }
    return WriteOutcome::kApplied;
  }

 private:
  std::string buffer_;  // reused across batches
};

}  // namespace

ConnectorSpec stdout_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Stdout";
  spec.is_source = false;
  spec.summary = "JSON lines on standard output, for debugging";
  spec.guarantee = Guarantee::kNone;
  spec.params = {};
  spec.make_sink = [](const ConnectorContext&) -> Result<std::unique_ptr<Sink>> {
    return std::make_unique<StdoutSink>();
  };
  return spec;
}

}  // namespace skippr
