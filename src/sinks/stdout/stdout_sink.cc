#include "sinks/stdout/stdout_sink.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "formats/json_rows.h"

namespace skippr {

namespace {

// With a source of several streams, each line says which stream its row is of, in this field (first, so a reader
// of the terminal sees it at once).
constexpr std::string_view kStreamField = "_skippr_stream";

class StdoutSink final : public Sink {
 public:
  explicit StdoutSink(bool source_streams) : source_streams_(source_streams) {}

  Guarantee guarantee() const override { return Guarantee::kNone; }

  using Sink::write;
  Result<WriteOutcome> write(const Batch& batch, const BatchId& id, const Position&) override {
    buffer_.clear();
    std::string stream_field;  // `{"_skippr_stream":"orders"`, the start of each line of a stream's row
    if (source_streams_) {
      stream_field = "{";
      append_json_string(kStreamField, stream_field);
      stream_field.push_back(':');
      append_json_string(batch.stream, stream_field);
    }
    for (size_t row = 0; row < batch.rows; ++row) {
      if (stream_field.empty()) {
        append_row_json(batch, row, buffer_);
      } else {
        row_.clear();
        append_row_json(batch, row, row_);
        buffer_ += stream_field;
        if (row_ != "{}") buffer_.push_back(',');
        buffer_.append(row_, 1);  // the row's fields and its closing brace
      }
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
  bool source_streams_;
  std::string buffer_;  // reused across batches
  std::string row_;     // one row, before its stream field is put in front
};

}  // namespace

ConnectorSpec stdout_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Stdout";
  spec.is_source = false;
  spec.summary = "JSON lines on standard output, for debugging";
  spec.guarantee = Guarantee::kNone;
  // Several streams interleave on one output, each line naming its stream.
  spec.lands_streams = true;
  spec.params = {};
  spec.make_sink = [](const ConnectorContext& ctx) -> Result<std::unique_ptr<Sink>> {
    return std::make_unique<StdoutSink>(ctx.source_streams);
  };
  return spec;
}

}  // namespace skippr
