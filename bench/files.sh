#!/usr/bin/env bash
# JSON lines -> Parquet: skipprd's File source and sink against DuckDB's own COPY on the same files.
# Knobs: SKIPPR_BENCH_FILES (100), SKIPPR_BENCH_BIG_MB (64: the one large file), SKIPPR_BENCH_DIR (a temp folder).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target skipprd test_files >/dev/null
dir="${SKIPPR_BENCH_DIR:-$(mktemp -d)}"
trap 'rm -rf "$dir"' EXIT
SKIPPR_BENCH_DIR="$dir" build/test_files --gtest_filter="FilesBench.*"
