#!/usr/bin/env bash
# WAL append vs raw write+fdatasync (1 and 8 MiB batches), group commit with 1/4/16 committers, WAL open with 1 GiB
# waiting (recovery.sh times the whole restart to the first sink write).
set -euo pipefail
BUILD=$(cd "${1:-build}" && pwd)
DIR=${BENCH_DIR:-$BUILD/bench-data}/wal
"$BUILD/wal_bench" append "$DIR" "${WAL_BENCH_MIB:-256}"
"$BUILD/wal_bench" group "$DIR"
"$BUILD/wal_bench" recover "$DIR" "${WAL_BENCH_RECOVER_GIB:-1}"
rm -rf "$DIR"
