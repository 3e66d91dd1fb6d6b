# Synapse: FreeTDS's ODBC driver (tdsodbc) talks to the Synapse emulator, which runs its SQL on PostgreSQL.
skippr_connector(Synapse
  KIND sink
  SPEC synapse_sink_spec
  HEADER sinks/synapse/synapse_sink.h
  CLIENTS azure odbc
  TEST_DEBIAN tdsodbc postgresql-15 python3-psycopg2
  TESTS tests/synapse
)
