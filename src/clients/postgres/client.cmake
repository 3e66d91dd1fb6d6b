# PostgreSQL's client library (libpq): the Postgres source and sink, and Redshift (which speaks its protocol).
skippr_client(postgres
  PKG_CONFIG libpq
  DEBIAN libpq-dev
)
