# ODBC (unixODBC); the Synapse sink's driver, FreeTDS's tdsodbc, is loaded at run time.
skippr_client(odbc
  PKG_CONFIG odbc
  DEBIAN unixodbc-dev
)
