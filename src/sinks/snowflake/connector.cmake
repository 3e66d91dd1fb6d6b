# Snowflake: tested against the Snowflake SQL API emulator (tests/support/snowflake_emulator, SQL on DuckDB).
skippr_connector(Snowflake
  KIND sink
  SPEC snowflake_sink_spec
  HEADER sinks/snowflake/snowflake_sink.h
  CLIENTS aws snowflake
  TESTS tests/snowflake
)
