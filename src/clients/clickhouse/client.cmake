# ClickHouse's HTTP interface.
skippr_client(clickhouse
  USES http
)
