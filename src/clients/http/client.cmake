# libcurl requests and libmicrohttpd servers: every HTTP API, and serve's page.
skippr_client(http
  CORE
  PKG_CONFIG libcurl libmicrohttpd
  DEBIAN libcurl4-openssl-dev libmicrohttpd-dev
)
