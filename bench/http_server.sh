#!/usr/bin/env bash
# HttpServer source: acknowledged requests per second and latencies, ack: committed vs ack: received, with 1 and 32
# concurrent keep-alive clients (10 records a request, DuckDB sink), each against the disk's own limit measured in
# the same run: one client waits for each ack, so it is compared with 4 KiB O_DSYNC writes per second; 32 clients
# with the WAL's group commit at 32 committers. Usage: bench/http_server.sh [build folder, default build];
# HTTP_BENCH_SECONDS per case (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_CASE=${HTTP_BENCH_SECONDS:-10}
BUILD=$(realpath -m "${1:-build}")
BIN=$(realpath -m "${SKIPPRD:-$BUILD/skipprd}")
for tool in "$BIN" "$BUILD/http_load_bench" "$BUILD/wal_bench"; do
  [ -x "$tool" ] || { echo "build $tool first: cmake --build build" >&2; exit 2; }
done
work=$(mktemp -d "${BENCH_DIR:-/tmp}/http.XXXXXX" 2>/dev/null || mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
pid=
# The limits, on the disk DATA_DIR is on.
dsync=$("$BUILD/wal_bench" dsync "$work" | sed -E 's/.*writes: ([0-9]+) writes.*/\1/')
group32=$("$BUILD/wal_bench" group "$work" 32 | sed -E 's/.*committers: +([0-9]+) commits.*/\1/')
echo "limits: ${dsync} O_DSYNC 4 KiB writes/s; ${group32} WAL commits/s with 32 committers (group commit)"
printf '%-10s %-8s %10s %9s %9s  %s\n' ack clients "req/s" "p50 ms" "p99 ms" "ratio (goal)"
for ack in committed received; do
  for clients in 1 32; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rm -rf "$work/case" && mkdir -p "$work/case"
    cat > "$work/case/skippr.yml" <<YML
data_sources:
  push:
    HttpServer: { listen_address: "127.0.0.1:$port", auth_token: bench, ack: $ack }
data_sinks:
  db:
    DuckDB: { path: out.duckdb, table: events }
pipelines:
  ingest:
    data_source: data_sources.push
    data_sink: data_sinks.db
YML
    (cd "$work/case" && DATA_DIR="$work/case/data" SKIPPR_CONFIG_FILE= exec "$BIN" sync --pipeline ingest) \
      >"$work/case/out" 2>&1 &
    pid=$!
    python3 - "$port" <<'PY'  # wait until requests are answered
import http.client, sys, time
for _ in range(400):
    try:
        c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=1); c.request("GET", "/healthz")
        if c.getresponse().status == 200: break
    except OSError: time.sleep(0.05)
PY
    read -r rps p50 p99 refused failed < <("$BUILD/http_load_bench" "http://127.0.0.1:$port/ingest" bench "$clients" \
      "$SECONDS_PER_CASE" 10)
    ratio=""
    if [ "$ack" = committed ] && [ "$clients" = 1 ]; then
      ratio=$(awk -v a="$rps" -v b="$dsync" 'BEGIN { printf "%.2f of O_DSYNC writes/s (>= 0.25)", a / b }')
    elif [ "$ack" = committed ]; then
      ratio=$(awk -v a="$rps" -v b="$group32" 'BEGIN { printf "%.2f of group commit at 32 (>= 0.6)", a / b }')
    fi
    [ "$refused$failed" = 00 ] || ratio="$ratio  ($refused refused, $failed failed)"
    printf '%-10s %-8s %10s %9s %9s  %s\n' "$ack" "$clients" "$rps" "$p50" "$p99" "$ratio"
    kill -TERM $pid; wait $pid || true
    pid=
  done
done
