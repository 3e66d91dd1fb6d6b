#!/usr/bin/env bash
# The replace landings against append, Sample -> DuckDB through the whole engine (reader, WAL with fdatasync, sink),
# REPLACE_BENCH_ROWS rows (default 1 M), default batch sizes, all in one run so the ratios share the machine's mood:
#  - append (the baseline: bench/duckdb.sh relates it to DuckDB's own appender);
#  - replace_partition on event_type, into an empty table, then a second pipeline (seed 2) into the same table, whose
#    sync replaces every partition (the delete of the old rows is the extra work);
#  - replace_table, a first refresh (every row written to the refresh table, then copied in by the swap) and a
#    second one over the full table (the old rows deleted as well).
set -euo pipefail
shopt -s inherit_errexit
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/replace_landings")
ROWS=${REPLACE_BENCH_ROWS:-1000000}
rm -rf "$DIR" && mkdir -p "$DIR"
cat >"$DIR/skippr.yml" <<YML
data_sources:
  first: { Sample: { rows: $ROWS, seed: 1 } }
  second: { Sample: { rows: $ROWS, seed: 2 } }
data_sinks:
  appended: { DuckDB: { path: out.duckdb, table: appended } }
  partitioned: { DuckDB: { path: out.duckdb, table: partitioned } }
  refreshed: { DuckDB: { path: out.duckdb, table: refreshed } }
pipelines:
  append: { data_source: first, data_sink: appended }
  partitions_new: { data_source: first, data_sink: partitioned, landing: replace_partition, partition_by: [event_type] }
  partitions_replaced: { data_source: second, data_sink: partitioned, landing: replace_partition, partition_by: [event_type] }
  refresh: { data_source: first, data_sink: refreshed, landing: replace_table }
YML
seconds() {  # pipeline -> wall seconds of `sync --once`
  (cd "$DIR" && DATA_DIR="$DIR/data" /usr/bin/time -f "%e" -o "$DIR/time.txt" "$BUILD/skipprd" sync --pipeline "$1" \
     --once --config "$DIR/skippr.yml" >/dev/null 2>&1)
  cat "$DIR/time.txt"
}
append=$(seconds append)
partitions_new=$(seconds partitions_new)
partitions_replaced=$(seconds partitions_replaced)
refresh_first=$(seconds refresh)
refresh_again=$(seconds refresh)
line() {  # label seconds
  awk -v l="$1" -v s="$2" -v a="$append" -v n="$ROWS" 'BEGIN {
    printf "%-52s %6.2f s  %8.0f rows/s  %.2fx append\n", l, s, n / s, s / a }'
}
line "append" "$append"
line "replace_partition, new partitions" "$partitions_new"
line "replace_partition, every partition replaced" "$partitions_replaced"
line "replace_table, first refresh" "$refresh_first"
line "replace_table, refresh over a full table" "$refresh_again"
rm -rf "$DIR"
