#!/usr/bin/env bash
# Runs every test: the C++ test binaries (unit, end-to-end, chaos) through CTest, then the Python tests if any.
# Each test starts the servers it needs itself, on loopback and free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

status=0
ctest --test-dir "$BUILD" --output-on-failure -j2 || status=1
if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then
  SKIPPR_BUILD_DIR="$PWD/$BUILD" /usr/bin/python3 -m pytest -q tests/python || status=1
fi
exit $status
