#!/usr/bin/env bash
# Sample -> Snowflake (SQL literals, and an external S3 stage on moto), BigQuery and Databricks through the emulators of their APIs (tests/support/*_emulator.cc, SQL on
# DuckDB) against Sample -> DuckDB, the emulators' own engine, for the same rows: the ratios say what each API path
# costs here (auth, JSON, SQL text or NDJSON, the emulator parsing it again), not how fast the services are.
# Knobs: SKIPPR_BENCH_ROWS (200000).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath -m "${1:-build}")
ROWS=${SKIPPR_BENCH_ROWS:-200000}
BIN=$BUILD/skipprd
BB=$BUILD/broker_bench
for tool in "$BIN" "$BB"; do
  [ -x "$tool" ] || { echo "build $tool first: cmake --build build" >&2; exit 2; }
done
work=$(mktemp -d)
pid=
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
now() { date +%s.%N; }
# One emulator at a time (bash keeps one coprocess): start it ("none": no emulator), time the sync into `sink`
# (prints its seconds), stop it.
through() {
  local helper=$1 sink=$2 endpoint=none secret=none bucket=none s3=none
  if [ "$helper" != none ]; then
    coproc EMULATOR { exec "$BB" "$helper"; }
    pid=$EMULATOR_PID
    read -r endpoint secret bucket s3 <&"${EMULATOR[0]}"
  fi
  cat >"$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  snowflake:
    Snowflake: { account: testorg-skippr, user: loader, private_key_file: "$secret", warehouse: LOAD_WH,
                 database: ANALYTICS, table: trips, endpoint: "$endpoint" }
  snowflake_staged:
    Snowflake: { account: testorg-skippr, user: loader, private_key_file: "$secret", warehouse: LOAD_WH,
                 database: ANALYTICS, table: trips, endpoint: "$endpoint", stage: ANALYTICS.PUBLIC.SKIPPR_STAGE,
                 stage_url: "s3://$bucket/stage", stage_threshold_bytes: 0, stage_endpoint: "$s3",
                 stage_access_key_id: testing, stage_secret_access_key: testing, stage_region: us-east-1 }
  bigquery:
    BigQuery: { project: skippr-test, dataset: analytics, table: trips, credentials_file: "$secret",
                endpoint: "$endpoint" }
  databricks:
    Databricks: { host: dbc-bench.cloud.databricks.com, token: "$secret", warehouse_id: a1b2c3d4e5f60718,
                  catalog: lakehouse, schema: analytics, volume: landing, table: trips, endpoint: "$endpoint" }
  duckdb:
    DuckDB: { path: "$work/peer.duckdb", table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.$sink
YML
  local t0 t1
  t0=$(now)
  (cd "$work" && DATA_DIR="$work/data-$sink" SKIPPR_CONFIG_FILE= "$BIN" sync --once --config "$work/skippr.yml" --pipeline bench >/dev/null)
  t1=$(now)
  if [ -n "$pid" ]; then kill $pid 2>/dev/null; wait $pid 2>/dev/null || true; pid=; fi
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
snowflake_s=$(through snowflake snowflake)
staged_s=$(through snowflake-staged snowflake_staged)
bigquery_s=$(through bigquery bigquery)
databricks_s=$(through databricks databricks)
duckdb_s=$(through none duckdb)
python3 - "$ROWS" "$snowflake_s" "$staged_s" "$bigquery_s" "$databricks_s" "$duckdb_s" <<'PY'
import sys
rows, snowflake, staged, bigquery, databricks, duckdb = int(sys.argv[1]), *map(float, sys.argv[2:7])
peer = rows / duckdb
for name, seconds in (("Snowflake emulator (SQL literals)", snowflake),
                      ("Snowflake emulator (S3 stage)   ", staged), ("BigQuery emulator               ", bigquery),
                      ("Databricks emulator             ", databricks)):
    rate = rows / seconds
    print(f"skipprd Sample -> {name}: {seconds:6.2f} s {rate:10,.0f} rows/s  ({100 * rate / peer:5.1f} % of DuckDB's)")
print(f"skipprd Sample -> DuckDB (their engine): {duckdb:6.2f} s {peer:10,.0f} rows/s")
PY
