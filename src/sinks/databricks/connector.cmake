# Databricks: tested against the Databricks SQL emulator (tests/support/databricks_emulator).
skippr_connector(Databricks
  KIND sink
  SPEC databricks_sink_spec
  HEADER sinks/databricks/databricks_sink.h
  CLIENTS databricks
  TESTS tests/databricks
)
