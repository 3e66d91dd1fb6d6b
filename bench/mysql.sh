#!/usr/bin/env bash
# MySQL source throughput, side by side in one run on one MariaDB:
#  1. snapshot: a ROWS-row table read by skipprd (mode snapshot) into DuckDB, against mariadb-dump of the same table
#     to a file (the export alone, the least a hand-made copy costs);
#  2. CDC: sysbench oltp_write_only writes for LOAD_SECONDS while no pipeline reads; then skipprd (cdc_only) catches
#     up with every change, timed, against the rate the load produced them.
# Usage: bench/mysql.sh [BUILD]   (ROWS=2000000, LOAD_SECONDS=20 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath "${1:-build}")
ROWS=${ROWS:-2000000}
LOAD_SECONDS=${LOAD_SECONDS:-20}
SKIPPRD="$BUILD/skipprd"
[ -x "$SKIPPRD" ] || { echo "build $SKIPPRD first (make build)"; exit 2; }
source bench/lib/mariadb.bash
work=$(mktemp -d /tmp/skippr-bench-my.XXXXXX)
start_mariadb "$work"
my_ -e "CREATE DATABASE bench"
my_ bench -e "CREATE TABLE big (id INT PRIMARY KEY, a INT, b VARCHAR(40), c DOUBLE, \
  d DATETIME(6)); INSERT INTO big SELECT seq, seq % 1000, CONCAT('row ', seq), seq / 4, \
  TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq SECOND FROM seq_1_to_$ROWS"
dsn="mysql://skippr:bench@127.0.0.1:$MY_PORT/bench"
cat > "$work/skippr.yml" <<YML
data_sources:
  snap:
    MySQL: { dsn: "$dsn", tables: [big], mode: snapshot }
  changes:
    MySQL: { dsn: "$dsn", tables: ["sbtest*"], mode: cdc_only }
data_sinks:
  duck:
    DuckDB: { path: "$work/snap.duckdb", table: big }
  cdc:
    DuckDB: { path: "$work/cdc.duckdb", table: "{stream}" }
pipelines:
  snapshot:
    data_source: data_sources.snap
    data_sink: data_sinks.duck
  stream:
    data_source: data_sources.changes
    data_sink: data_sinks.cdc
YML
now() { date +%s.%N; }
run() { (cd "$work" && DATA_DIR="$work/data-skippr" "$SKIPPRD" sync --pipeline "$1" --once --config "$work/skippr.yml" >/dev/null); }

t0=$(now); run snapshot; t1=$(now)
t2=$(now)
mariadb-dump --no-defaults -h 127.0.0.1 -P "$MY_PORT" -uskippr -pbench --single-transaction --quick bench big \
  >"$work/big.sql"
t3=$(now)

sb=(sysbench oltp_write_only --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$MY_PORT" --mysql-user=skippr
  --mysql-password=bench --mysql-db=bench --tables=10 --table-size=10000 --threads=2)
"${sb[@]}" prepare >/dev/null
run stream  # pins the stream's start before the load
t4=$(now)
transactions=$("${sb[@]}" --time="$LOAD_SECONDS" run | awk '/transactions:/ {print $2}')
t5=$(now)
t6=$(now); run stream; t7=$(now)
# Every change landed: one appended row each (the sysbench tables' changes, deletes included).
sum=$(for i in $(seq 1 10); do echo -n "(SELECT count(*) FROM sbtest$i) + "; done)
landed=$(cd "$work" && DATA_DIR="$work/data-skippr" "$SKIPPRD" query --config "$work/skippr.yml" --pipeline stream \
  --output json --sql "SELECT ${sum}0 AS n" | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["n"])')
[ "$landed" = "$((4 * transactions))" ] || { echo "skipprd landed $landed of $((4 * transactions)) changes"; exit 1; }
python3 - "$ROWS" "$t0" "$t1" "$t2" "$t3" "$transactions" "$t4" "$t5" "$t6" "$t7" "$(du -m "$work/big.sql" | cut -f1)" <<'PY'
import sys
rows = int(sys.argv[1]); t0, t1, t2, t3 = map(float, sys.argv[2:6]); tx = int(sys.argv[6])
t4, t5, t6, t7 = map(float, sys.argv[7:11]); mb = sys.argv[11]
snap, dump = rows / (t1 - t0), rows / (t3 - t2)
changes = 4 * tx  # oltp_write_only: an index update, a non-index update, a delete and an insert per transaction
load, cdc = changes / (t5 - t4), changes / (t7 - t6)
print(f"snapshot of {rows} rows ({mb} MB as a dump)")
print(f"skipprd MySQL -> DuckDB       : {t1 - t0:7.2f} s  {snap:12,.0f} rows/s  (landed, durable)")
print(f"mariadb-dump to a file        : {t3 - t2:7.2f} s  {dump:12,.0f} rows/s")
print(f"ratio (time skipprd / dump)   : {(t1 - t0) / (t3 - t2):6.2f}x  (goal <= 1.25x)")
print(f"CDC: {tx} sysbench transactions, {changes} row changes over 10 tables")
print(f"the load produced             : {t5 - t4:7.2f} s  {load:12,.0f} changes/s")
print(f"skipprd caught up (cdc_only)  : {t7 - t6:7.2f} s  {cdc:12,.0f} changes/s  ({cdc / load:.1f}x the load)")
PY
