#!/usr/bin/env bash
# Sample -> Snowflake through the emulator of its SQL API (tests/support/snowflake_emulator.cc, SQL on DuckDB) against
# Sample -> DuckDB, the emulator's own engine, for the same rows: the ratio says what the API path costs here (JWT,
# JSON, the rows as SQL literals, parsing them again), not how fast Snowflake is. Knobs: SKIPPR_BENCH_ROWS (200000).
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
coproc EMULATOR { exec "$BB" snowflake; }
emulator_pid=$EMULATOR_PID
trap 'kill $emulator_pid 2>/dev/null; wait $emulator_pid 2>/dev/null; rm -rf "$work"' EXIT
read -r endpoint key <&"${EMULATOR[0]}"
cat >"$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  snowflake:
    Snowflake: { account: testorg-skippr, user: loader, private_key_file: "$key", warehouse: LOAD_WH,
                 database: ANALYTICS, table: trips, endpoint: "$endpoint" }
  duckdb:
    DuckDB: { path: "$work/peer.duckdb", table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.snowflake
  peer:
    data_source: data_sources.sample
    data_sink: data_sinks.duckdb
YML
now() { date +%s.%N; }
run() { (cd "$work" && DATA_DIR="$work/data" SKIPPR_CONFIG_FILE= "$BIN" sync --once --config "$work/skippr.yml" "$@" >/dev/null); }
t0=$(now)
run --pipeline bench
t1=$(now)
run --pipeline peer
t2=$(now)
python3 - "$ROWS" "$t0" "$t1" "$t2" <<'PY'
import sys
rows, t0, t1, t2 = int(sys.argv[1]), *map(float, sys.argv[2:5])
sink, peer = rows / (t1 - t0), rows / (t2 - t1)
print(f"skipprd Sample -> Snowflake emulator: {t1 - t0:6.2f} s {sink:10,.0f} rows/s (SQL API, rows as literals)")
print(f"skipprd Sample -> DuckDB (its engine) : {t2 - t1:6.2f} s {peer:10,.0f} rows/s")
print(f"ratio                                : {100 * sink / peer:5.1f} %")
PY
