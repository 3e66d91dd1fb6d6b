#!/usr/bin/env bash
# HttpServer source: acknowledged requests per second and p99 latency, ack: committed vs ack: received, with 1 and 32
# concurrent clients (10 records a request, DuckDB sink). Usage: bench/http_server.sh [build folder, default build];
# HTTP_BENCH_SECONDS per case (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_CASE=${HTTP_BENCH_SECONDS:-10}
BIN=$(realpath -m "${SKIPPRD:-${1:-build}/skipprd}")
[ -x "$BIN" ] || { echo "build skipprd first: cmake --build build --target skipprd" >&2; exit 2; }
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
printf '%-10s %-8s %12s %10s %10s\n' ack clients "req/s" "p50 ms" "p99 ms"
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
    python3 - "$port" "$clients" "$SECONDS_PER_CASE" "$ack" <<'PY'
import http.client, json, sys, threading, time
port, clients, seconds, ack = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
for _ in range(200):  # wait for the listener
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=1); c.request("GET", "/healthz")
        if c.getresponse().status == 200: break
    except OSError: time.sleep(0.05)
body = "\n".join(json.dumps({"id": i, "payload": "x" * 80}) for i in range(10)).encode()
headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
lat, lock, stop, resets = [], threading.Lock(), time.time() + seconds, [0]
def client():
    c, mine = http.client.HTTPConnection("127.0.0.1", port, timeout=30), []
    while time.time() < stop:
        t = time.perf_counter()
        try:
            c.request("POST", "/ingest", body, headers); r = c.getresponse(); r.read()
        except (ConnectionError, http.client.HTTPException):  # the server closed a kept-alive connection: a client retries
            c.close(); c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            with lock: resets[0] += 1
            continue
        if r.status == 200: mine.append(time.perf_counter() - t)
    with lock: lat.extend(mine)
threads = [threading.Thread(target=client) for _ in range(clients)]
start = time.time(); [t.start() for t in threads]; [t.join() for t in threads]
lat.sort(); n = len(lat)
print(f"{ack:<10} {clients:<8} {n / (time.time() - start):12.0f} {lat[n // 2] * 1e3:10.2f} {lat[min(n - 1, int(n * 0.99))] * 1e3:10.2f}"
      + (f"  ({resets[0]} connections reset and retried)" if resets[0] else ""))
PY
    kill -TERM $pid; wait $pid || true
  done
done
