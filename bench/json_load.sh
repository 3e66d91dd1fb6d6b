#!/usr/bin/env bash
# JSON lines -> DuckDB against DuckDB's own read_json on the same file (bench/json_load_bench.cc). The data comes from
# bench/gen_jsonl.py (seeded): SKIPPR_BENCH_JSON_RECORDS records of ~565 bytes (400000: ~226 MB).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/json_load")
mkdir -p "$DIR"
python3 "$(dirname "$0")/gen_jsonl.py" "$DIR/events.jsonl" "${SKIPPR_BENCH_JSON_RECORDS:-400000}"
"$BUILD/json_load_bench" "$DIR/run" "$DIR/events.jsonl" 2>/dev/null
rm -rf "$DIR"
