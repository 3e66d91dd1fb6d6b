#!/usr/bin/env bash
# Postgres CDC of many tables through one slot against CDC of one table with the same changes, side by side: the same
# ROWS inserted and then updated, spread over TABLES tables (each transaction touching 5 of them) or in one table
# (same-sized transactions), streamed by `sync --once` (cdc_only, the slots made before the changes) into DuckDB with
# merge_by_key. Both slots decode the same server WAL (each keeps what its publication names), so the comparison is
# of what skipprd does per table. Prints each run's time, rows per second and peak RSS, and the ratio.
# Usage: bench/many_tables_cdc.sh [BUILD]   (TABLES=20 ROWS=200000 by default; starts its own PostgreSQL 15)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
TABLES=${TABLES:-20}
ROWS=${ROWS:-200000}
SKIPPRD="$BUILD/skipprd"
[ -x "$SKIPPRD" ] || { echo "build $SKIPPRD first (make build)"; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
source bench/lib/postgres.bash
work=$(mktemp -d /tmp/skippr-bench-cdc-tables.XXXXXX)
start_postgres "$work" wal_level=logical max_replication_slots=10 max_wal_senders=10
psql_ -d postgres -c "CREATE DATABASE bench"
psql_ -d bench -q <<SQL
CREATE SCHEMA many;
CREATE SCHEMA one;
DO \$\$ BEGIN
  FOR i IN 1..$TABLES LOOP
    EXECUTE format('CREATE TABLE many.t_%s (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz)', i);
  END LOOP;
END \$\$;
CREATE TABLE one.t_all (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz);
SQL

config() {  # $1 name, $2 schema, $3 tables entry, $4 table of the sink
  mkdir -p "$work/$1"
  cat > "$work/$1/skippr.yml" <<YML
data_sources:
  app:
    Postgres: { dsn: "postgresql://postgres@127.0.0.1:$PG_PORT/bench", schema: $2, tables: [$3], mode: cdc_only }
data_sinks:
  db:
    DuckDB: { path: $work/$1/out.duckdb, table: "$4" }
pipelines:
  $1:
    data_source: data_sources.app
    data_sink: data_sinks.db
    landing: merge_by_key
YML
}
sync_once() {  # $1 name; prints "start end peak_rss_kib"
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$work/$1" && DATA_DIR="$work/$1/data" /usr/bin/time -f "%M" -o "$work/$1/rss" \
    "$SKIPPRD" sync --pipeline "$1" --once --config "$work/$1/skippr.yml" >/dev/null 2>"$work/$1/log")
  t1=$(date +%s.%N)
  echo "$t0 $t1 $(cat "$work/$1/rss")"
}
config many many '"t_*"' "{stream}"
config one one t_all t_all
# The one-table pipeline names its key (one table, one primary_key); the many-table one takes each table's own.
sed -i 's/    landing: merge_by_key/    landing: merge_by_key\n    primary_key: id/' "$work/one/skippr.yml"
sync_once many >/dev/null  # creates the slot and publication: the changes below are streamed
sync_once one >/dev/null

# ROWS inserts, then ROWS/2 updates, in transactions of 50 changes: 5 tables of 10 rows each, or 50 rows of one.
per_table=$((ROWS / TABLES))
psql_ -d bench -q <<SQL
DO \$\$ DECLARE b int; BEGIN
  FOR b IN 0..($per_table / 10 - 1) LOOP
    FOR g IN 0..($TABLES / 5 - 1) LOOP
      FOR k IN 1..5 LOOP
        EXECUTE format('INSERT INTO many.t_%s SELECT b, %L || b, b * 1.25, now() FROM generate_series(%s, %s) b',
                       g * 5 + k, 'row-', b * 10 + 1, b * 10 + 10);
      END LOOP;
      COMMIT;
    END LOOP;
  END LOOP;
  FOR b IN 0..($ROWS / 50 - 1) LOOP
    INSERT INTO one.t_all SELECT i, 'row-' || i, i * 1.25, now() FROM generate_series(b * 50 + 1, b * 50 + 50) i;
    COMMIT;
  END LOOP;
  FOR b IN 0..($per_table / 20 - 1) LOOP
    FOR g IN 0..($TABLES / 5 - 1) LOOP
      FOR k IN 1..5 LOOP
        EXECUTE format('UPDATE many.t_%s SET amount = amount + 1 WHERE id BETWEEN %s AND %s', g * 5 + k,
                       b * 10 + 1, b * 10 + 10);
      END LOOP;
      COMMIT;
    END LOOP;
  END LOOP;
  FOR b IN 0..($ROWS / 100 - 1) LOOP
    UPDATE one.t_all SET amount = amount + 1 WHERE id BETWEEN b * 50 + 1 AND b * 50 + 50;
    COMMIT;
  END LOOP;
END \$\$;
SQL

read -r a0 a1 a_rss < <(sync_once one)
read -r b0 b1 b_rss < <(sync_once many)
count() {  # $1 pipeline, $2 table: its rows in the DuckDB destination
  (cd "$work/$1" && DATA_DIR="$work/$1/data" "$SKIPPRD" query --config "$work/$1/skippr.yml" --output json \
    --sql "SELECT count(*) AS n FROM $2" | python3 -c 'import json, sys; print(int(json.loads(sys.stdin.readline())["n"]))')
}
[ "$(count one t_all)" = "$ROWS" ] || { echo "the one-table run landed $(count one t_all) rows, not $ROWS"; exit 1; }
[ "$(count many t_1)" = "$per_table" ] || { echo "t_1 holds $(count many t_1) rows, not $per_table"; exit 1; }
python3 - "$TABLES" "$ROWS" "$a0" "$a1" "$a_rss" "$b0" "$b1" "$b_rss" <<'PY'
import sys
tables, rows = int(sys.argv[1]), int(sys.argv[2])
a0, a1, a_rss, b0, b1, b_rss = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
changes = rows + rows // 2
print(f"changes: {changes} ({rows} inserts, {rows // 2} updates, transactions of 50)")
print(f"1 table  CDC: {a1 - a0:7.2f} s  {changes / (a1 - a0):10,.0f} changes/s  peak RSS {a_rss / 1024:7.1f} MiB")
print(f"{tables} tables CDC: {b1 - b0:7.2f} s  {changes / (b1 - b0):10,.0f} changes/s  peak RSS {b_rss / 1024:7.1f} MiB")
print(f"ratio time {(b1 - b0) / (a1 - a0):.2f}x (goal <= 1.2x), RSS {b_rss / a_rss:.2f}x")
PY
