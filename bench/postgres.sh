#!/usr/bin/env bash
# Sample -> Postgres sink throughput against the physical limit on the same server: `psql \copy` of the same rows
# from a file into an empty table of the same shape. Prints both rates and their ratio (goal: >= 70 %).
# Usage: bench/postgres.sh [BUILD]   (ROWS=1000000 by default; starts and stops its own PostgreSQL 15)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
ROWS=${ROWS:-1000000}
SKIPPRD="$BUILD/skipprd"
[ -x "$SKIPPRD" ] || { echo "build $SKIPPRD first (make build)"; exit 2; }
source bench/lib/postgres.bash
work=$(mktemp -d /tmp/skippr-bench-pg.XXXXXX)
# Server defaults otherwise (fsync on): both sides pay the same durability.
start_postgres "$work"
psql_ -d postgres -c "CREATE DATABASE bench"

cat > "$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  pg:
    Postgres: { dsn: "postgresql://postgres@127.0.0.1:$PG_PORT/bench", table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.pg
YML
now() { date +%s.%N; }
t0=$(now)
(cd "$work" && DATA_DIR="$work/data" "$SKIPPRD" sync --pipeline bench --once --config "$work/skippr.yml" >/dev/null)
t1=$(now)
landed=$(psql_ -d bench -tAc "SELECT count(*) FROM trips")
[ "$landed" = "$ROWS" ] || { echo "skipprd landed $landed of $ROWS rows"; exit 1; }

# The physical limit: the same rows, already in a file, loaded by psql's \copy into an empty table of the same shape.
psql_ -d bench -c "\\copy trips TO '$work/trips.copy'"
psql_ -d bench -c "CREATE TABLE trips_copy (LIKE trips); CHECKPOINT"
t2=$(now)
psql_ -d bench -c "\\copy trips_copy FROM '$work/trips.copy'"
t3=$(now)

python3 - "$ROWS" "$t0" "$t1" "$t2" "$t3" "$(du -m "$work/trips.copy" | cut -f1)" <<'PY'
import sys
rows, t0, t1, t2, t3, mb = int(sys.argv[1]), *map(float, sys.argv[2:6]), sys.argv[6]
sink, copy = rows / (t1 - t0), rows / (t3 - t2)
print(f"rows: {rows} ({mb} MB as COPY text)")
print(f"skipprd Sample -> Postgres : {t1 - t0:7.2f} s  {sink:12,.0f} rows/s  (WAL fsync + binary COPY + ledger)")
print(f"psql \\copy from file       : {t3 - t2:7.2f} s  {copy:12,.0f} rows/s")
print(f"ratio                      : {100 * sink / copy:6.1f} %  (goal >= 70 %)")
PY
