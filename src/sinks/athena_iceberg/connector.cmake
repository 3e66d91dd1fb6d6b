# AthenaIceberg: tested against moto_server's S3 and Glue.
skippr_connector(AthenaIceberg
  KIND sink
  SPEC athena_iceberg_sink_spec
  HEADER sinks/athena_iceberg/athena_iceberg_sink.h
  CLIENTS aws
  TESTS tests/lakes
)
