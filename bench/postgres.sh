#!/usr/bin/env bash
# Sample -> Postgres sink throughput against the physical limit on the same server: `psql \copy` of the same rows
# from a file into an empty table of the same shape. Prints both rates and their ratio (goal: >= 70 %).
# Usage: bench/postgres.sh [BUILD]   (ROWS=1000000 by default; starts and stops its own PostgreSQL 15)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
ROWS=${ROWS:-1000000}
BIN=/usr/lib/postgresql/15/bin
SKIPPRD="$BUILD/skipprd"
[ -x "$SKIPPRD" ] || { echo "build $SKIPPRD first (make build)"; exit 2; }

work=$(mktemp -d /tmp/skippr-bench-pg.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() { as_pg "$BIN/pg_ctl" -D "$work/pgdata" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
[ "$(id -u)" = 0 ] && chown postgres: "$work"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg "$BIN/initdb" -D "$work/pgdata" -U postgres --auth=trust -E UTF8 --locale=C >/dev/null
# Server defaults otherwise (fsync on): both sides pay the same durability.
as_pg "$BIN/pg_ctl" -D "$work/pgdata" -l "$work/server.log" -w \
  -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$work -c max_wal_size=4GB" start >/dev/null
psql_() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres "$@"; }
psql_ -d postgres -c "CREATE DATABASE bench"

cat > "$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  pg:
    Postgres: { dsn: "postgresql://postgres@127.0.0.1:$port/bench", table: trips }
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
