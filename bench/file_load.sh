#!/usr/bin/env bash
# Files -> DuckDB and Parquet: skipprd's File source into its DuckDB sink (JSON lines and CSV), into its File sink
# (Parquet) and into a SkipprLake Iceberg table on a folder (Parquet plus manifests and a commit per group), each a whole `skipprd sync --once` (reader, WAL with fdatasync, sink, exit), against DuckDB loading the
# same file by itself (bench/file_load_bench.cc); plus each run's peak RSS (/usr/bin/time). The data comes from
# bench/gen_jsonl.py (seeded): SKIPPR_BENCH_JSON_RECORDS records of ~565 bytes (400000: ~226 MB); the CSV is DuckDB's
# own COPY of it (nested values as DuckDB's text of its STRUCTs and LISTs). Not the same work on both sides: DuckDB
# makes STRUCT / LIST columns where skipprd keeps JSON text, and it writes no WAL and syncs nothing before its last
# checkpoint (its Parquet baseline writes from an in-memory database), while skipprd fdatasyncs every batch.
set -euo pipefail
shopt -s inherit_errexit
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/file_load")
rm -rf "$DIR" && mkdir -p "$DIR"
python3 "$(dirname "$0")/gen_jsonl.py" "$DIR/events.jsonl" "${SKIPPR_BENCH_JSON_RECORDS:-400000}"
"$BUILD/file_load_bench" "$DIR/alone" "$DIR/events.jsonl" "$DIR/events.csv" >"$DIR/alone.txt"
declare -A alone
while read -r name seconds; do alone[$name]=$seconds; done <"$DIR/alone.txt"
rm -rf "$DIR/alone"

# skipprd FORMAT FILE SINK -> "SECONDS MAX_RSS_KIB" of `sync --once` from FILE into SINK (a YAML flow mapping).
pipeline() {
  local run="$DIR/run" && rm -rf "$run" && mkdir -p "$run"
  cat >"$run/skippr.yml" <<YML
data_sources:
  files:
    File: { path: "$2", format: $1 }
data_sinks:
  out:
    $3
pipelines:
  bench:
    data_source: data_sources.files
    data_sink: data_sinks.out
YML
  (cd "$run" && DATA_DIR="$run/data" /usr/bin/time -f "%e %M" -o "$run/time.txt" "$BUILD/skipprd" sync \
     --pipeline bench --once --config "$run/skippr.yml" >/dev/null 2>&1)
  cat "$run/time.txt"
  rm -rf "$run"
}
report() {  # label file peer_seconds "seconds rss"
  local mb && mb=$(du -m --apparent-size "$2" | cut -f1)
  read -r seconds rss <<<"$4"
  awk -v l="$1" -v o="$seconds" -v a="$3" -v r="$rss" -v mb="$mb" 'BEGIN {
    printf "%s, %d MB: skipprd %.2f s, DuckDB alone %.2f s; ratio %.2f (goal <= 1.25); skipprd peak RSS %.0f MiB\n",
      l, mb, o, a, o / a, r / 1024 }'
}
# Each run is assigned first, so a failed sync stops the bench (set -e) instead of printing a ratio of nothing.
json=$(pipeline jsonl "$DIR/events.jsonl" 'DuckDB: { path: out.duckdb, table: events }')
csv=$(pipeline csv "$DIR/events.csv" 'DuckDB: { path: out.duckdb, table: events }')
parquet=$(pipeline jsonl "$DIR/events.jsonl" 'File: { path: out, format: parquet }')
lake=$(pipeline jsonl "$DIR/events.jsonl" 'SkipprLake: { path: out, table: events }')
report "jsonl -> duckdb (vs read_json CTAS)" "$DIR/events.jsonl" "${alone[json]}" "$json"
report "csv -> duckdb (vs read_csv CTAS)" "$DIR/events.csv" "${alone[csv]}" "$csv"
report "jsonl -> parquet files (vs COPY read_json TO parquet)" "$DIR/events.jsonl" "${alone[parquet]}" "$parquet"
report "jsonl -> SkipprLake Iceberg table (vs COPY read_json TO parquet)" "$DIR/events.jsonl" "${alone[parquet]}" "$lake"
rm -rf "$DIR"
