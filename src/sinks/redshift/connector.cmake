# Redshift: the Redshift emulator executes the SQL on PostgreSQL and stages on moto's S3.
skippr_connector(Redshift
  KIND sink
  SPEC redshift_sink_spec
  HEADER sinks/redshift/redshift_sink.h
  CLIENTS aws postgres
  TEST_DEBIAN postgresql-15 python3-psycopg2
  TESTS tests/redshift
)
