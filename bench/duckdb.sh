#!/usr/bin/env bash
# Sample -> DuckDB through the engine vs DuckDB's own insert of the same rows (no WAL), then the pipeline's peak RSS
# at 1 M and 10 M rows with default settings (/usr/bin/time -v; Debian package `time`).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/duckdb")
"$BUILD/duckdb_bench" "$DIR" "${DUCKDB_BENCH_ROWS:-1000000}" 2>/dev/null

peak_rss_kib() {  # rows -> KiB
  local dir="$DIR/rss-$1"
  rm -rf "$dir" && mkdir -p "$dir"
  cat >"$dir/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $1, seed: 1 }
data_sinks:
  warehouse:
    DuckDB: { path: out.duckdb, table: trips }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
YML
  (cd "$dir" && DATA_DIR="$dir/data" /usr/bin/time -v "$BUILD/skipprd" sync --pipeline bench --once \
     --config "$dir/skippr.yml" 2>"$dir/time.txt" >/dev/null)
  awk -F': ' '/Maximum resident set size/ {print $2}' "$dir/time.txt"
}
small=$(peak_rss_kib 1000000)
large=$(peak_rss_kib "${RSS_BENCH_LARGE_ROWS:-10000000}")
awk -v s="$small" -v l="$large" 'BEGIN { printf "peak RSS sample -> duckdb: 1 M rows %.0f MiB, 10 M rows %.0f MiB, ratio %.2f\n", s/1024, l/1024, l/s }'
rm -rf "$DIR"
