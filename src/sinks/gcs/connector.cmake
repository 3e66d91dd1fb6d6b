# GCS: tested against the GCS emulator (tests/support/gcs_emulator).
skippr_connector(GCS
  KIND sink
  SPEC gcs_sink_spec
  HEADER sinks/gcs/gcs_sink.h
  CLIENTS gcs
  TESTS tests/objectstores
)
