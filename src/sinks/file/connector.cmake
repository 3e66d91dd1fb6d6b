skippr_connector(File
  KIND sink
  SPEC file_sink_spec
  HEADER sinks/file/file_sink.h
  TESTS tests/files
)
