#!/usr/bin/env bash
# Sample -> Snowflake and Sample -> BigQuery through the emulators of their APIs (tests/support/*_emulator.cc, SQL on
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
coproc SNOWFLAKE { exec "$BB" snowflake; }
snowflake_pid=$SNOWFLAKE_PID
read -r sf_endpoint sf_key <&"${SNOWFLAKE[0]}"
coproc BIGQUERY { exec "$BB" bigquery; }
bigquery_pid=$BIGQUERY_PID
trap 'kill $snowflake_pid $bigquery_pid 2>/dev/null; wait $snowflake_pid $bigquery_pid 2>/dev/null; rm -rf "$work"' EXIT
read -r bq_endpoint bq_key <&"${BIGQUERY[0]}"
cat >"$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  snowflake:
    Snowflake: { account: testorg-skippr, user: loader, private_key_file: "$sf_key", warehouse: LOAD_WH,
                 database: ANALYTICS, table: trips, endpoint: "$sf_endpoint" }
  bigquery:
    BigQuery: { project: skippr-test, dataset: analytics, table: trips, credentials_file: "$bq_key",
                endpoint: "$bq_endpoint" }
  duckdb:
    DuckDB: { path: "$work/peer.duckdb", table: trips }
pipelines:
  snowflake:
    data_source: data_sources.sample
    data_sink: data_sinks.snowflake
  bigquery:
    data_source: data_sources.sample
    data_sink: data_sinks.bigquery
  peer:
    data_source: data_sources.sample
    data_sink: data_sinks.duckdb
YML
now() { date +%s.%N; }
run() { (cd "$work" && DATA_DIR="$work/data" SKIPPR_CONFIG_FILE= "$BIN" sync --once --config "$work/skippr.yml" "$@" >/dev/null); }
t0=$(now); run --pipeline snowflake
t1=$(now); run --pipeline bigquery
t2=$(now); run --pipeline peer
t3=$(now)
python3 - "$ROWS" "$t0" "$t1" "$t2" "$t3" <<'PY'
import sys
rows, t0, t1, t2, t3 = int(sys.argv[1]), *map(float, sys.argv[2:6])
peer = rows / (t3 - t2)
for name, a, b in (("Snowflake emulator", t0, t1), ("BigQuery emulator ", t1, t2)):
    rate = rows / (b - a)
    print(f"skipprd Sample -> {name}: {b - a:6.2f} s {rate:10,.0f} rows/s  ({100 * rate / peer:5.1f} % of DuckDB's)")
print(f"skipprd Sample -> DuckDB (their engine): {t3 - t2:6.2f} s {peer:10,.0f} rows/s")
PY
