#!/usr/bin/env bash
# Kafka source into DuckDB, on librdkafka's mock cluster (6 partitions): `sync --once` of KAFKA_BENCH_MESSAGES
# (default 120,000) JSON messages against Debian's kcat reading the same topic (`-C -o beginning -e`), and the seconds
# from a restart after SIGKILL to the first new record landed. Usage: bench/kafka.sh [build folder, default build].
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath -m "${1:-build}")
BIN=$BUILD/skipprd
KB=$BUILD/kafka_bench
N=${KAFKA_BENCH_MESSAGES:-120000}
for tool in "$BIN" "$KB"; do
  [ -x "$tool" ] || { echo "build $tool first: cmake --build build" >&2; exit 2; }
done
work=$(mktemp -d)
pid=
coproc CLUSTER { exec "$KB" cluster events 6; }
cluster_pid=$CLUSTER_PID
trap 'kill $pid $cluster_pid 2>/dev/null || true; rm -rf "$work"' EXIT
read -r bootstrap <&"${CLUSTER[0]}"
"$KB" produce "$bootstrap" events 0 "$N"
cat >"$work/skippr.yml" <<YML
data_sources:
  stream:
    Kafka: { brokers: "$bootstrap", topics: [events], group_id: bench }
data_sinks:
  db:
    DuckDB: { path: out.duckdb, table: events }
pipelines:
  kafka:
    data_source: data_sources.stream
    data_sink: data_sinks.db
YML
now() { date +%s.%N; }
# exec: the background runs below are the skipprd process itself, so kill -9 reaches it.
sync() { cd "$work" && DATA_DIR="$work/data" SKIPPR_CONFIG_FILE= exec "$BIN" sync --pipeline kafka "$@"; }

t0=$(now)
(sync --once) >/dev/null 2>"$work/once.err" || { cat "$work/once.err" >&2; exit 1; }
t1=$(now)
skippr_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
if command -v kcat >/dev/null; then
  t0=$(now)
  kcat -C -b "$bootstrap" -t events -o beginning -e -q >/dev/null
  t1=$(now)
  kcat_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
  ratio=$(awk -v a="$skippr_s" -v b="$kcat_s" 'BEGIN { printf "%.2f", a / b }')
  echo "kafka --once of $N messages: skipprd ${skippr_s} s, kcat -C -o beginning -e ${kcat_s} s: ratio $ratio (<= 1.5)"
else
  echo "kafka --once of $N messages: skipprd ${skippr_s} s (kcat is not installed: apt-get install kcat for the ratio)"
fi

# Restart after SIGKILL: a running sync is killed, more messages arrive, and a new sync starts; how long until the
# first of them has landed (batches of the killed run that wait in the WAL land first and are not counted).
(sync --output json) >"$work/run1.out" 2>/dev/null &
pid=$!
"$KB" produce "$bootstrap" events "$N" 1000
for _ in $(seq 600); do grep -q '"event":"batch_landed"' "$work/run1.out" && break; sleep 0.05; done
kill -9 $pid
wait $pid 2>/dev/null || true
"$KB" produce "$bootstrap" events $((N + 1000)) 1000
t0=$(now)
(sync --output json) >"$work/run2.out" 2>"$work/run2.err" &
pid=$!
landed=
for _ in $(seq 1200); do
  if grep -q '"replayed":false' "$work/run2.out"; then landed=$(now); break; fi
  sleep 0.02
done
kill -TERM $pid 2>/dev/null || { echo "the restarted sync ended early:"; tail -3 "$work/run2.err"; }
wait $pid 2>/dev/null || true
pid=
if [ -n "$landed" ]; then
  echo "kafka restart after SIGKILL to the first new record landed: $(awk -v a="$t0" -v b="$landed" 'BEGIN { printf "%.2f", b - a }') s (<= 2)"
else
  echo "kafka restart after SIGKILL: no new record landed within 24 s:"; tail -3 "$work/run2.err"
fi
