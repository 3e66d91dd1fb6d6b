skippr_connector(Postgres
  KIND sink
  SPEC postgres_sink_spec
  HEADER sinks/postgres/postgres_sink.h
  CLIENTS postgres
  TEST_DEBIAN postgresql-15 postgresql-client-15
  TESTS tests/postgres tests/postgres_chaos tests/sinks
)
