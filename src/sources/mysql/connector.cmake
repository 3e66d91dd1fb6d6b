# MySQL / MariaDB: the tests start their own MariaDB server (binlog on, ROW format, GTIDs) as the mysql user.
skippr_connector(MySQL
  KIND source
  SPEC mysql_source_spec
  HEADER sources/mysql/mysql_source.h
  CLIENTS mariadb
  TEST_DEBIAN mariadb-server sysbench
  TESTS tests/mysql tests/mysql_cdc_chaos tests/mysql_snapshot_chaos
)
