#!/usr/bin/env bash
# Runs every benchmark in bench/ (each prints its own table).
set -euo pipefail
cd "$(dirname "$0")"
for b in *.sh; do
  [ "$b" = run.sh ] && continue
  echo "== $b"
  ./"$b" "$@"
done
