skippr_connector(Sample
  KIND source
  SPEC sample_source_spec
  HEADER sources/sample/sample_source.h
  TESTS tests/sources tests/e2e
)
