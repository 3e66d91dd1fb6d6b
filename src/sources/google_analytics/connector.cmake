# GoogleAnalytics: the tests run against the GA4 emulator (tests/support/ga4_emulator).
skippr_connector(GoogleAnalytics
  KIND source
  SPEC google_analytics_source_spec
  HEADER sources/google_analytics/google_analytics_source.h
  CLIENTS google
  TESTS tests/refresh
)
