#!/usr/bin/env bash
# Fast recovery end to end: skipprd restarting with 1 GiB of committed but not landed WAL, timed to its first sink
# write (the first replayed batch committed in DuckDB), page cache warm and cold for the WAL. Goal: < 2 s.
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=$(realpath -m "${BENCH_DIR:-$BUILD/bench-data}/recovery")
"$BUILD/recovery_bench" "$BUILD/skipprd" "$DIR" "${RECOVERY_BENCH_GIB:-1}"
rm -rf "$DIR"
