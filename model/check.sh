#!/usr/bin/env bash
# Checks every model of model/ with Spin (Debian's spin), exhaustively for its small bounds, and every deliberately
# broken variant, which must fail with a trail: the proof that the model can catch that bug. Prints the states
# explored and the time of each run. Exit 0 when every property holds and every broken variant fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
status=0

# check MODEL EXPECT [-DVARIANT...]: EXPECT is "holds" or "fails".
check() {
  local model="$1" expect="$2"
  shift 2
  local name="$model${1:+ $*}"
  rm -rf "$work/run" && mkdir -p "$work/run" && cp "$here/$model" "$work/run/"
  (cd "$work/run" && spin -a "$@" "$model" >/dev/null && gcc -O2 -DSAFETY -w -o pan pan.c) || {
    echo "FAIL $name: the model does not compile"
    status=1
    return
  }
  local out
  out="$(cd "$work/run" && ./pan -m1000000 2>&1)" || true
  local states errors seconds
  states="$(sed -n 's/^ *\([0-9][0-9]*\) states, stored.*/\1/p' <<<"$out" | head -1)"
  errors="$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' <<<"$out" | head -1)"
  seconds="$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' <<<"$out" | head -1)"
  if grep -q 'max search depth too small' <<<"$out"; then
    echo "FAIL $name: the search was cut short (max search depth too small): raise -m"
    status=1
  elif [ "$expect" = holds ] && [ "$errors" = 0 ]; then
    echo "ok   $name: every property holds ($states states, ${seconds:-0} s)"
  elif [ "$expect" = fails ] && [ "${errors:-0}" != 0 ]; then
    local why
    why="$(grep -m1 -E 'assertion violated|invalid end state|acceptance cycle' <<<"$out" || true)"
    echo "ok   $name: fails as it must ($why; $states states; trail:"
    # The trail's story: the steps that change what the model's "story:" line names (its durable state), then the
    # step that failed.
    local story
    story="$(sed -n 's/^ *\* *story: *//p; s/^ *story: *//p' "$here/$model" | head -1)"
    (cd "$work/run" && spin -t -p "$@" "$model" 2>/dev/null | grep -E '^ *[0-9]+:' >trail.txt || true
     { if [ -n "$story" ]; then grep -E "\[($story)" trail.txt | tail -14; fi; grep -E 'assert' trail.txt | tail -1; } |
       sed -E 's/^ *[0-9]+:\t?//; s/^/       /')
    echo "     )"
  else
    echo "FAIL $name: expected it to $expect, got $errors error(s)"
    echo "$out" | sed 's/^/       /'
    status=1
  fi
}

check local_wal.pml holds
check local_wal.pml fails -DACK_BEFORE_FSYNC
check local_wal.pml fails -DNEW_ID_ON_RETRY
check local_wal.pml fails -DNO_LINEAGE
check local_wal.pml fails -DDELETE_NEWEST
check stages.pml holds
check stages.pml fails -DMARK_TO_COMMITTED
check stages.pml fails -DACK_BEFORE_FSYNC
check s3_lease.pml holds
check s3_lease.pml fails -DCOMMIT_WITHOUT_TOKEN
check s3_lease.pml fails -DNEW_SEQ_ON_RETRY
check clustered.pml holds
check clustered.pml fails -DACK_LOCAL_ONLY
check clustered.pml fails -DNO_TERM_CHECK
check clustered.pml fails -DPROMOTE_INCOMPLETE
exit $status
