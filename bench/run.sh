#!/usr/bin/env bash
# Runs every benchmark in bench/ (each bench/*.sh takes the build folder as its argument).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
status=0
for bench in bench/*.sh; do
  [ "$(basename "$bench")" = run.sh ] && continue
  echo "== $bench"
  bash "$bench" "$BUILD" || status=1
done
exit $status
