#!/usr/bin/env bash
# One Postgres pipeline over many tables (streams) against one table of the same rows: a snapshot of TABLES tables
# of ROWS_PER_TABLE rows each (pattern "t_*") into DuckDB, one table each, side by side with a snapshot of one table
# holding all those rows into one DuckDB table. Prints the time and the peak RSS of each sync (/usr/bin/time), so the
# memory a stream costs can be read off.
# Usage: bench/many_tables.sh [BUILD]   (TABLES=1000 ROWS_PER_TABLE=200 by default; starts its own PostgreSQL 15)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
TABLES=${TABLES:-1000}
ROWS_PER_TABLE=${ROWS_PER_TABLE:-200}
SKIPPRD="$BUILD/skipprd"
[ -x "$SKIPPRD" ] || { echo "build $SKIPPRD first (make build)"; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }
source bench/lib/postgres.bash
work=$(mktemp -d /tmp/skippr-bench-tables.XXXXXX)
start_postgres "$work"
psql_ -d postgres -c "CREATE DATABASE bench"
psql_ -d bench -q <<SQL
CREATE SCHEMA many;
CREATE SCHEMA one;
DO \$\$ BEGIN
  FOR i IN 1..$TABLES LOOP
    EXECUTE format('CREATE TABLE many.t_%s (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz)', i);
    EXECUTE format('INSERT INTO many.t_%s SELECT g, %L || g, g * 1.25, timestamptz %L + g * interval %L '
                   'FROM generate_series(1, $ROWS_PER_TABLE) g', i, 'row-', '2026-01-01', '1 minute');
  END LOOP;
END \$\$;
CREATE TABLE one.t_all (id int PRIMARY KEY, name text, amount numeric(12,2), at timestamptz);
INSERT INTO one.t_all SELECT g, 'row-' || g, g * 1.25, timestamptz '2026-01-01' + g * interval '1 minute'
  FROM generate_series(1, $TABLES * $ROWS_PER_TABLE) g;
SQL

run() {  # $1 name, $2 schema, $3 tables entry, $4 table pattern of the sink
  mkdir -p "$work/$1"
  cat > "$work/$1/skippr.yml" <<YML
data_sources:
  app:
    Postgres: { dsn: "postgresql://postgres@127.0.0.1:$PG_PORT/bench", schema: $2, tables: [$3], mode: snapshot }
data_sinks:
  db:
    DuckDB: { path: $work/$1/out.duckdb, table: "$4" }
pipelines:
  bench:
    data_source: data_sources.app
    data_sink: data_sinks.db
YML
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$work/$1" && DATA_DIR="$work/$1/data" /usr/bin/time -f "%M" -o "$work/$1/rss" \
    "$SKIPPRD" sync --pipeline bench --once --config "$work/$1/skippr.yml" >/dev/null)
  t1=$(date +%s.%N)
  echo "$t0 $t1 $(cat "$work/$1/rss")"
}
read -r a0 a1 a_rss < <(run one one t_all t_all)
read -r b0 b1 b_rss < <(run many many '"t_*"' "{stream}")
python3 - "$TABLES" "$ROWS_PER_TABLE" "$a0" "$a1" "$a_rss" "$b0" "$b1" "$b_rss" <<'PY'
import sys
tables, per = int(sys.argv[1]), int(sys.argv[2])
a0, a1, a_rss, b0, b1, b_rss = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7]), int(sys.argv[8])
rows = tables * per
print(f"rows: {rows} ({tables} tables of {per}, or one table)")
print(f"1 table     : {a1 - a0:7.2f} s  {rows / (a1 - a0):10,.0f} rows/s  peak RSS {a_rss / 1024:7.1f} MiB")
print(f"{tables} tables: {b1 - b0:7.2f} s  {rows / (b1 - b0):10,.0f} rows/s  peak RSS {b_rss / 1024:7.1f} MiB")
print(f"ratio time {(b1 - b0) / (a1 - a0):.2f}x, RSS {b_rss / a_rss:.2f}x, {(b_rss - a_rss) / tables:.1f} KiB a table more")
PY
