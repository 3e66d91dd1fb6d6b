# DuckDB's C API: the formats, the engine's `query` and the DuckDB sinks use it.
skippr_client(duckdb
  CORE
)
