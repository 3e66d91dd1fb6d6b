#!/usr/bin/env bash
# Runs every benchmark script in this folder (bench/*.sh), one after another.
set -euo pipefail
cd "$(dirname "$0")"
for script in ./*.sh; do
  [ "$script" = ./run.sh ] && continue
  echo "== $script"
  "$script"
done
