#!/usr/bin/env bash
# CDC lag: pgbench's TPC-B (4 clients, CDC_BENCH_SECONDS, default 60) against a PostgreSQL 15 of its own, while
# `skipprd sync` streams pgbench_accounts (snapshot_then_cdc) into DuckDB with merge_by_key on aid. Each landed batch
# reports the seconds from the source commit of its oldest change to its landing (the worst row of the batch); the
# bench prints p50 / p99 / max over the run, and p50 of the first and last third of it (bounded: it must not grow).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
SECONDS_TO_RUN=${CDC_BENCH_SECONDS:-60}
source bench/lib/postgres.bash
work=$(mktemp -d /tmp/skippr-bench-cdc.XXXXXX)
start_postgres "$work" wal_level=logical max_replication_slots=4 max_wal_senders=4
psql_ -d postgres -c "CREATE DATABASE bench"
"$PG_BIN/pgbench" -q -i -s 1 -h 127.0.0.1 -p "$PG_PORT" -U postgres bench >/dev/null 2>&1

cat >"$work/skippr.yml" <<YML
data_sources:
  bank:
    Postgres: { dsn: "postgresql://postgres@127.0.0.1:$PG_PORT/bench", tables: [pgbench_accounts], mode: snapshot_then_cdc }
data_sinks:
  mirror:
    DuckDB: { path: $work/mirror.duckdb, table: accounts }
pipelines:
  bank:
    data_source: data_sources.bank
    data_sink: data_sinks.mirror
    landing: merge_by_key
    primary_key: [aid]
YML
(cd "$work" && exec env DATA_DIR="$work/data" "$BUILD/skipprd" sync --pipeline bank --config "$work/skippr.yml" \
   --output json >"$work/events.jsonl" 2>"$work/skipprd.log") &
skipprd=$!
BENCH_PIDS+=("$skipprd")
# The snapshot (100,000 accounts) lands first; the workload starts once it has.
snapshot_landed=false
for _ in $(seq 1 600); do
  python3 - "$work/events.jsonl" <<'PY' && { snapshot_landed=true; break; }
import json, sys
rows = sum(json.loads(l).get("rows", 0) for l in open(sys.argv[1]) if '"batch_landed"' in l)
sys.exit(0 if rows >= 100000 else 1)
PY
  sleep 0.1
  kill -0 "$skipprd" 2>/dev/null || { echo "cdc lag: skipprd stopped: $(tail -3 "$work/skipprd.log")"; exit 1; }
done
$snapshot_landed || { echo "cdc lag: the snapshot did not land within 60 s: $(tail -3 "$work/skipprd.log")"; exit 1; }
"$PG_BIN/pgbench" -c 4 -j 2 -T "$SECONDS_TO_RUN" -h 127.0.0.1 -p "$PG_PORT" -U postgres bench >"$work/pgbench.txt" 2>&1
sleep 3  # the last batches land
kill -TERM "$skipprd" && wait "$skipprd" || true
python3 - "$work/events.jsonl" "$(grep -o 'tps = [0-9.]*' "$work/pgbench.txt" | head -1)" <<'PY'
import json, statistics, sys
events = [json.loads(l) for l in open(sys.argv[1])]
# In landing order; the snapshot's batches tell no lag.
lags = [e["source_lag_seconds"] for e in events if e["event"] == "batch_landed" and "source_lag_seconds" in e]
if len(lags) < 10:
    sys.exit(f"cdc lag: only {len(lags)} streamed batches landed; see the skipprd log")
values = sorted(lags)
pct = lambda q: values[min(len(values) - 1, int(q * len(values)))]
third = len(lags) // 3
first, last = statistics.median(lags[:third]), statistics.median(lags[-third:])
print(f"cdc lag, pgbench TPC-B 4 clients ({sys.argv[2]}) -> DuckDB merge_by_key, {len(lags)} batches: "
      f"p50 {pct(0.5):.2f} s, p99 {pct(0.99):.2f} s, max {values[-1]:.2f} s; "
      f"p50 first third {first:.2f} s, last third {last:.2f} s")
PY
