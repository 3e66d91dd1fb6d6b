#include "sinks/stdout/stdout_sink.h"

namespace skippr {

ConnectorSpec stdout_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "Stdout";
  spec.is_source = false;
  spec.summary = "JSON lines on standard output, for debugging";
  spec.guarantee = Guarantee::kNone;
  spec.params = {};
  spec.make_sink = [](const ConnectorContext&) -> Result<std::unique_ptr<Sink>> {
    return fail(ErrorKind::kInternal, "Stdout sink: not built yet");  // STUB: replaced by the real sink
  };
  return spec;
}

}  // namespace skippr
