#!/usr/bin/env bash
# Sample -> AMQP (one persistent, confirmed message per row into a durable classic queue) against the peer: a plain
# rabbitmq-c program (bench/broker_bench.cc) publishing the same JSON bodies to the same broker with confirms and
# mandatory set. The broker (Debian's RabbitMQ, started as the tests start it) is the limit of both, so the ratio
# says what the WAL, the encoding and the per-row ids cost. Knobs: SKIPPR_BENCH_ROWS (200000).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(realpath -m "${1:-build}")
ROWS=${SKIPPR_BENCH_ROWS:-200000}
BIN=$BUILD/skipprd
BB=$BUILD/broker_bench
for tool in "$BIN" "$BB"; do
  [ -x "$tool" ] || { echo "build $tool first: cmake --build build" >&2; exit 2; }
done
work=$(mktemp -d)
coproc BROKER { exec "$BB" rabbitmq; }
broker_pid=$BROKER_PID
trap 'kill $broker_pid 2>/dev/null; wait $broker_pid 2>/dev/null; rm -rf "$work"' EXIT
read -r port <&"${BROKER[0]}"
cat >"$work/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS, seed: 1 }
data_sinks:
  mq:
    AMQP: { url: "amqp://guest:guest@127.0.0.1:$port/", routing_key: sink, declare: { queue: sink } }
  file:
    File: { path: "$work/rows/", format: jsonl }
pipelines:
  bench:
    data_source: data_sources.sample
    data_sink: data_sinks.mq
  bodies:
    data_source: data_sources.sample
    data_sink: data_sinks.file
YML
now() { date +%s.%N; }
run() { (cd "$work" && DATA_DIR="$work/data" SKIPPR_CONFIG_FILE= "$BIN" sync --once --config "$work/skippr.yml" "$@" >/dev/null); }
run --pipeline bodies
cat "$work"/rows/*.jsonl >"$work/bodies.jsonl"
t0=$(now)
run --pipeline bench
t1=$(now)
got=$("$BB" count "$port" sink)
[ "$got" = "$ROWS" ] || { echo "skipprd published $got of $ROWS messages"; exit 1; }
t2=$(now)
"$BB" publish "$port" peer "$work/bodies.jsonl"
t3=$(now)
got=$("$BB" count "$port" peer)
[ "$got" = "$ROWS" ] || { echo "the peer published $got of $ROWS messages"; exit 1; }
python3 - "$ROWS" "$t0" "$t1" "$t2" "$t3" <<'PY'
import sys
rows, t0, t1, t2, t3 = int(sys.argv[1]), *map(float, sys.argv[2:6])
sink, peer = rows / (t1 - t0), rows / (t3 - t2)
print(f"skipprd Sample -> AMQP (message_per: row): {t1 - t0:6.2f} s {sink:10,.0f} msg/s (WAL fsync + confirms + ids)")
print(f"rabbitmq-c publisher, same bodies        : {t3 - t2:6.2f} s {peer:10,.0f} msg/s")
print(f"ratio                                    : {100 * sink / peer:5.1f} %")
PY
