# ClickHouse: the tests start ClickHouse (and ZooKeeper for replicated tables).
skippr_connector(ClickHouse
  KIND sink
  SPEC clickhouse_sink_spec
  HEADER sinks/clickhouse/clickhouse_sink.h
  CLIENTS clickhouse
  TEST_DEBIAN clickhouse-server clickhouse-client zookeeper
  TESTS tests/clickhouse
)
