#!/usr/bin/env bash
# Runs every test: the C++ test binaries (unit, end-to-end, chaos) through CTest, then the Python tests if any.
# Each test starts the servers it needs itself, on loopback and free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}

status=0
ctest --test-dir "$BUILD" --output-on-failure -j2 || status=1
# The protocol's models (CTest 'model'): what Spin explored for each, and each broken variant's trail, shown even
# when they pass (CTest shows a passing test's output nowhere else).
if [ -f "$BUILD/Testing/Temporary/LastTest.log" ]; then
  echo "== model/check.sh (Spin):"
  awk '/^[0-9]+\/[0-9]+ Test: model$/{on=1; next} on && /^"model" end time/{on=0} on && !/^(Command|Directory|Output):|^-+$/' \
    "$BUILD/Testing/Temporary/LastTest.log"
fi
if [ -d tests/python ] && ls tests/python/test_*.py >/dev/null 2>&1; then
  SKIPPR_BUILD_DIR="$(realpath -m "$BUILD")" /usr/bin/python3 -m pytest -q tests/python || status=1
fi
exit $status
