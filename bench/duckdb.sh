#!/usr/bin/env bash
# Sample -> DuckDB through the engine vs DuckDB's own insert of the same rows (no WAL; DUCKDB_BENCH_ROWS, default
# 4 M), then the pipeline's peak RSS at 1 M and 10 M rows with default settings (/usr/bin/time -v; Debian package
# `time`). Also the whole sync's rows/s with landing append vs merge_by_key.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/duckdb")
"$BUILD/duckdb_bench" "$DIR" "${DUCKDB_BENCH_ROWS:-4000000}" 2>/dev/null

# A Sample -> DuckDB pipeline "bench" in folder $1: $2 rows, landing $3.
write_config() {
  rm -rf "$1" && mkdir -p "$1"
  local key=""
  [ "$3" = merge_by_key ] && key="    primary_key: trip_id"
  cat >"$1/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $2, seed: 1 }
data_sinks:
  warehouse:
    DuckDB: { path: out.duckdb, table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
    landing: $3
$key
YML
}
peak_rss_kib() {  # rows -> KiB
  local dir="$DIR/rss-$1"
  write_config "$dir" "$1" append
  (cd "$dir" && DATA_DIR="$dir/data" /usr/bin/time -v "$BUILD/skipprd" sync --pipeline bench --once \
     --config "$dir/skippr.yml" 2>"$dir/time.txt" >/dev/null)
  awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt"
}
# Sample -> DuckDB through skipprd with default settings, append vs merge_by_key on trip_id (every key new).
pipeline_rate() {  # landing -> rows/s of the whole sync (reader, WAL, sink)
  local dir="$DIR/rate-$1"
  write_config "$dir" "${DUCKDB_BENCH_ROWS:-4000000}" "$1"
  (cd "$dir" && DATA_DIR="$dir/data" "$BUILD/skipprd" sync --pipeline bench --once --config "$dir/skippr.yml" \
     --output json | grep -o '"rows_per_second":[0-9]*' | cut -d: -f2)
}
append_rate=$(pipeline_rate append)
merge_rate=$(pipeline_rate merge_by_key)
echo "sample -> duckdb, ${DUCKDB_BENCH_ROWS:-4000000} rows through skipprd: append $append_rate rows/s, merge_by_key $merge_rate rows/s"

small=$(peak_rss_kib 1000000)
large=$(peak_rss_kib "${RSS_BENCH_LARGE_ROWS:-10000000}")
awk -v s="$small" -v l="$large" 'BEGIN { printf "peak RSS sample -> duckdb: 1 M rows %.0f MiB, 10 M rows %.0f MiB, ratio %.2f\n", s/1024, l/1024, l/s }'
rm -rf "$DIR"
