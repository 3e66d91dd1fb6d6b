# BigQuery: tested against the BigQuery emulator (tests/support/bigquery_emulator).
skippr_connector(BigQuery
  KIND sink
  SPEC bigquery_sink_spec
  HEADER sinks/bigquery/bigquery_sink.h
  CLIENTS bigquery
  TESTS tests/bigquery
)
