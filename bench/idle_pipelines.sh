#!/usr/bin/env bash
# What idle pipelines cost under `skipprd serve`: N pipelines (File source of JSON lines -> a DuckDB file each), every
# one landed its rows and waits for the next poll. Prints the process's threads and resident memory, and the same
# per pipeline. Knobs: SKIPPR_BENCH_PIPELINES (50), SKIPPR_BENCH_SETTLE_SECONDS (15).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath -m "${1:-build}")
BIN=$BUILD/skipprd
N=${SKIPPR_BENCH_PIPELINES:-50}
SETTLE=${SKIPPR_BENCH_SETTLE_SECONDS:-15}
[ -x "$BIN" ] || { echo "build $BIN first: cmake --build build" >&2; exit 2; }
work=$(mktemp -d)
trap '[ -n "${pid:-}" ] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
{
  echo "data_sources:"
  for i in $(seq 0 $((N - 1))); do echo "  s$i: { File: { path: \"$work/in$i/*.jsonl\", format: jsonl } }"; done
  echo "data_sinks:"
  for i in $(seq 0 $((N - 1))); do echo "  d$i: { DuckDB: { path: \"$work/out$i.duckdb\", table: t } }"; done
  echo "pipelines:"
  for i in $(seq 0 $((N - 1))); do
    printf '  p%s:\n    data_source: data_sources.s%s\n    data_sink: data_sinks.d%s\n' "$i" "$i" "$i"
  done
} >"$work/skippr.yml"
for i in $(seq 0 $((N - 1))); do
  mkdir -p "$work/in$i"
  for r in $(seq 1 100); do echo "{\"id\": $r, \"name\": \"row $r\"}"; done >"$work/in$i/a.jsonl"
done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
DATA_DIR="$work/data" SKIPPR_CONFIG_FILE="$work/skippr.yml" SYNC_FREQUENCY=60 \
  "$BIN" serve --listen "127.0.0.1:$port" 2>"$work/serve.err" &
pid=$!
for _ in $(seq 1 120); do
  landed=$(curl -sf "http://127.0.0.1:$port/api/status" |
    python3 -c 'import json,sys; print(sum(1 for p in json.load(sys.stdin) if p.get("rows_landed",0)==100))' 2>/dev/null || echo 0)
  [ "$landed" = "$N" ] && break
  sleep 1
done
[ "$landed" = "$N" ] || { echo "only $landed of $N pipelines landed" >&2; cat "$work/serve.err" >&2; exit 1; }
sleep "$SETTLE"
threads=$(awk '/^Threads:/ {print $2}' /proc/$pid/status)
rss_kib=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
echo "idle pipelines: $N"
echo "threads: $threads ($(python3 -c "print(f'{$threads/$N:.1f}')") per pipeline)"
echo "resident memory: $((rss_kib / 1024)) MiB ($(python3 -c "print(f'{$rss_kib/1024/$N:.2f}')") MiB per pipeline)"
