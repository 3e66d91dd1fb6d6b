skippr_connector(HttpClient
  KIND source
  SPEC http_client_source_spec
  HEADER sources/http_client/http_client_source.h
  CLIENTS http
  TESTS tests/streaming
)
