# S3: tested against moto_server (Python's moto, in the image).
skippr_connector(S3
  KIND sink
  SPEC s3_sink_spec
  HEADER sinks/s3/s3_sink.h
  CLIENTS aws
  TESTS tests/objectstores
)
