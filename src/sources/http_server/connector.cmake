skippr_connector(HttpServer
  KIND source
  SPEC http_server_source_spec
  HEADER sources/http_server/http_server_source.h
  CLIENTS http
  TESTS tests/streaming
)
