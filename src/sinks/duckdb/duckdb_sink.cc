#include "sinks/duckdb/duckdb_sink.h"

namespace skippr {

ConnectorSpec duckdb_sink_spec() {
  ConnectorSpec spec;
  spec.type_name = "DuckDB";
  spec.is_source = false;
  spec.summary = "an embedded DuckDB database file";
  spec.guarantee = Guarantee::kExactlyOnce;
  spec.params = {
      {"path", ParamType::kPath, true, nullptr, "the database file; created when absent"},
      {"table", ParamType::kString, true, nullptr, "the target table; created from the first batch's schema"},
  };
  spec.make_sink = [](const ConnectorContext&) -> Result<std::unique_ptr<Sink>> {
    return fail(ErrorKind::kInternal, "DuckDB sink: not built yet");  // STUB: replaced by the real sink
  };
  return spec;
}

}  // namespace skippr
