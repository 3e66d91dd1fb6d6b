#!/usr/bin/env bash
# Sample -> ClickHouse over HTTP (RowBinary inserts into the default ReplacingMergeTree table) against the peer: the
# same rows, already as one RowBinary file, loaded by `clickhouse-client --query "INSERT ... FORMAT RowBinary"` (the
# native protocol) into a table of the same shape on the same server. Knobs: SKIPPR_BENCH_ROWS (1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath -m "${1:-build}")
ROWS=${SKIPPR_BENCH_ROWS:-1000000}
BIN=$BUILD/skipprd
BB=$BUILD/broker_bench
for tool in "$BIN" "$BB"; do
  [ -x "$tool" ] || { echo "build $tool first: cmake --build build" >&2; exit 2; }
done
work=$(mktemp -d)
coproc SERVER { exec "$BB" clickhouse; }
server_pid=$SERVER_PID
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$work"' EXIT
read -r url tcp_port <&"${SERVER[0]}"
ch() { curl -sS --fail-with-body "$url/" --data-binary "$1"; }
ch "CREATE DATABASE bench"
cat >"$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  ch:
    ClickHouse: { url: "$url", database: bench, table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.ch
YML
now() { date +%s.%N; }
t0=$(now)
(cd "$work" && DATA_DIR="$work/data" SKIPPR_CONFIG_FILE= "$BIN" sync --pipeline bench --once --config "$work/skippr.yml" >/dev/null)
t1=$(now)
got=$(ch "SELECT count() FROM bench.trips")
[ "$got" = "$ROWS" ] || { echo "skipprd landed $got of $ROWS rows"; exit 1; }
ch "SELECT * FROM bench.trips FORMAT RowBinary" >"$work/trips.rb"
ch "CREATE TABLE bench.peer AS bench.trips"
t2=$(now)
clickhouse-client --host 127.0.0.1 --port "$tcp_port" --query "INSERT INTO bench.peer FORMAT RowBinary" <"$work/trips.rb"
t3=$(now)
got=$(ch "SELECT count() FROM bench.peer")
[ "$got" = "$ROWS" ] || { echo "the peer landed $got of $ROWS rows"; exit 1; }
python3 - "$ROWS" "$t0" "$t1" "$t2" "$t3" "$(du -m "$work/trips.rb" | cut -f1)" <<'PY'
import sys
rows, t0, t1, t2, t3, mb = int(sys.argv[1]), *map(float, sys.argv[2:6]), sys.argv[6]
sink, peer = rows / (t1 - t0), rows / (t3 - t2)
print(f"rows: {rows} ({mb} MB as RowBinary)")
print(f"skipprd Sample -> ClickHouse     : {t1 - t0:6.2f} s {sink:11,.0f} rows/s (WAL fsync + RowBinary over HTTP)")
print(f"clickhouse-client INSERT RowBinary: {t3 - t2:6.2f} s {peer:11,.0f} rows/s")
print(f"ratio                            : {100 * sink / peer:5.1f} %")
PY
