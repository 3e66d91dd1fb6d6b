# Postgres: the tests start their own PostgreSQL server (logical replication for CDC).
skippr_connector(Postgres
  KIND source
  SPEC postgres_source_spec
  HEADER sources/postgres/postgres_source.h
  CLIENTS postgres
  TEST_DEBIAN postgresql-15 postgresql-client-15
  TESTS tests/postgres tests/postgres_cdc_chaos
)
