skippr_connector(Stdout
  KIND sink
  SPEC stdout_sink_spec
  HEADER sinks/stdout/stdout_sink.h
  TESTS tests/sinks
)
