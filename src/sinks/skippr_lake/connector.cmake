# SkipprLake: the tests read its tables back with icebird, which install-deps.sh fetches from the npm registry.
skippr_connector(SkipprLake
  KIND sink
  SPEC skippr_lake_sink_spec
  HEADER sinks/skippr_lake/skippr_lake_sink.h
  CLIENTS aws
  TESTS tests/lakes
)
