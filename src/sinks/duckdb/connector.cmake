# DuckDB: DuckDB's library comes from the npm registry (scripts/install-deps.sh), as Debian has none.
skippr_connector(DuckDB
  KIND sink
  SPEC duckdb_sink_spec
  HEADER sinks/duckdb/duckdb_sink.h
  CLIENTS duckdb
  TESTS tests/sinks tests/e2e
)

skippr_connector(MotherDuck
  KIND sink
  SPEC motherduck_sink_spec
  HEADER sinks/duckdb/motherduck_sink.h
  CLIENTS duckdb
  TESTS tests/e2e
)
