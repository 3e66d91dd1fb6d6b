#!/usr/bin/env bash
# `make bench`: every bench/*.sh in turn, each given the build folder. BENCH_REPEAT=N runs each N times (the CPU is
# often shared: report the best). Scratch data goes to $BENCH_DIR (default: <build>/bench-data), on the disk under test.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
export BENCH_DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}")
cmake --build "$BUILD" --target skipprd wal_bench duckdb_bench recovery_bench wal_commit_bench file_load_bench http_load_bench kafka_bench broker_bench >/dev/null
for script in bench/*.sh; do
  case "$(basename "$script")" in run.sh | cold_setup.sh) continue ;; esac  # cold_setup: a fresh machine, by itself
  for ((i = 1; i <= ${BENCH_REPEAT:-1}; i++)); do
    echo "== $script (run $i)"
    bash "$script" "$BUILD"
  done
done
rm -rf "$BENCH_DIR"
