#include "sources/sample/sample_source.h"

namespace skippr {

ConnectorSpec sample_source_spec() {
  ConnectorSpec spec;
  spec.type_name = "Sample";
  spec.is_source = true;
  spec.summary = "a deterministic bike-hire event generator";
  spec.params = {
      {"rows", ParamType::kInt, false, 100000, "how many rows to generate (trip_id 1..rows)"},
      {"seed", ParamType::kInt, false, 1, "the generator's seed: same seed, same rows"},
      {"start_at", ParamType::kString, false, "2024-01-01T00:00:00Z", "event_time of the first row (ISO 8601, UTC)"},
  };
  spec.make_source = [](const ConnectorContext&) -> Result<std::unique_ptr<Source>> {
    return fail(ErrorKind::kInternal, "Sample source: not built yet");  // STUB: replaced by the real source
  };
  return spec;
}

}  // namespace skippr
