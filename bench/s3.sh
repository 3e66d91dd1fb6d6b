#!/usr/bin/env bash
# Sample -> S3 (moto_server on loopback) against `aws s3 cp --recursive` uploading the same objects to the same
# server: the ratio says how close the sink's PUT path comes to AWS's own CLI. moto is the bottleneck of both (a
# Python server), so this measures overhead, not S3's bandwidth. Knobs: SKIPPR_BENCH_ROWS (1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROWS=${SKIPPR_BENCH_ROWS:-1000000}
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
moto_server -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null; rm -rf "$dir"' EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:$port"
export AWS_EC2_METADATA_DISABLED=true
for _ in $(seq 50); do curl -s -o /dev/null "$AWS_ENDPOINT_URL" && break; sleep 0.1; done
curl -s -X PUT "$AWS_ENDPOINT_URL/sink" >/dev/null
curl -s -X PUT "$AWS_ENDPOINT_URL/cli" >/dev/null
cat >"$dir/skippr.yml" <<YML
data_sources:
  sample:
    Sample: { rows: $ROWS }
data_sinks:
  s3:
    S3: { bucket: sink, prefix: trips/, format: jsonl }
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.s3
YML
start=$(date +%s.%N)
(cd "$dir" && DATA_DIR="$dir/data" BUFFER_THRESHOLD_BYTES=16MiB "$OLDPWD/$BUILD/skipprd" sync --pipeline bikehire --once >/dev/null)
sink_s=$(python3 -c "print($(date +%s.%N) - $start)")
aws s3 cp --recursive --only-show-errors s3://sink/trips/ "$dir/objects/"
bytes=$(du -sb "$dir/objects" | cut -f1)
start=$(date +%s.%N)
aws s3 cp --recursive --only-show-errors "$dir/objects/" s3://cli/trips/
cli_s=$(python3 -c "print($(date +%s.%N) - $start)")
python3 - "$bytes" "$sink_s" "$cli_s" "$ROWS" <<'PY'
import sys
b, sink, cli, rows = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
mb = b / 1e6
print(f"s3: {rows} rows, {mb:.1f} MB of JSON lines; skipprd Sample->S3 (read, WAL fsync, encode, PUT) "
      f"{mb / sink:.1f} MB/s in {sink:.2f}s; aws s3 cp of the same objects {mb / cli:.1f} MB/s in {cli:.2f}s; "
      f"ratio {cli / sink:.2f}")
PY
