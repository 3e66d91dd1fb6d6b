# MariaDB Connector/C (libmariadb): SQL and the binlog dump of the MySQL source, for MariaDB and MySQL servers.
skippr_client(mariadb
  PKG_CONFIG libmariadb libcurl
  DEBIAN libmariadb-dev libcurl4-openssl-dev
)
