# Athena: tested against moto_server's S3 and Glue.
skippr_connector(Athena
  KIND sink
  SPEC athena_sink_spec
  HEADER sinks/athena/athena_sink.h
  CLIENTS aws
  TESTS tests/lakes
)
