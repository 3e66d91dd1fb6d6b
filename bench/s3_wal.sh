#!/usr/bin/env bash
# WAL_STORAGE=s3 + SKIPPR_STATE_STORE=dynamodb against moto_server on loopback: commit latency (p50/p99) and
# batches/s of the S3 WAL at 64 KiB and 1 MiB, beside a plain `aws s3api put-object` loop of the same sizes and a
# boto3 loop doing the same two requests per commit (PUT with If-None-Match, then a conditional UpdateItem) in one
# process. moto (a Python server) bounds all three; the ratios say what the WAL adds over the calls it must make.
# Knobs: SKIPPR_BENCH_COMMITS (200), SKIPPR_BENCH_CLI_PUTS (20: each aws call starts a Python process).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
COMMITS=${SKIPPR_BENCH_COMMITS:-200}
CLI_PUTS=${SKIPPR_BENCH_CLI_PUTS:-20}
dir=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PATH="$PATH:$HOME/.pyenv/shims"
moto_server -H 127.0.0.1 -p "$port" >"$dir/moto.log" 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null; rm -rf "$dir"' EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_EC2_METADATA_DISABLED=true
for _ in $(seq 50); do curl -s -o /dev/null "$AWS_ENDPOINT_URL" && break; sleep 0.1; done
curl -s -X PUT "$AWS_ENDPOINT_URL/wal" >/dev/null
curl -s -X PUT "$AWS_ENDPOINT_URL/peer" >/dev/null
export WAL_STORAGE=s3 SKIPPR_WAL_S3_BUCKET=wal SKIPPR_STATE_STORE=dynamodb SKIPPR_STATE_DYNAMODB_TABLE=bench-state
export DATA_DIR="$dir/data"
PYBOTO=$(ls "$HOME/.pyenv/shims/python3" 2>/dev/null || command -v python3)  # the one with boto3
for kib in 64 1024; do
  "$BUILD/wal_commit_bench" "$kib" "$COMMITS"
  head -c $((kib * 1024)) /dev/urandom >"$dir/body"
  start=$(date +%s.%N)
  for i in $(seq "$CLI_PUTS"); do
    aws s3api put-object --bucket peer --key "cli-$kib/$i" --body "$dir/body" >/dev/null
  done
  python3 -c "import sys; s=float(sys.argv[1]); n=int(sys.argv[2]); print(f'aws s3api put-object {sys.argv[3]} KiB loop: {1000*s/n:.1f} ms per object, {n/s:.1f} objects/s')" \
    "$(python3 -c "print($(date +%s.%N) - $start)")" "$CLI_PUTS" "$kib"
  "$PYBOTO" - "$kib" "$COMMITS" "$dir/body" <<'PY'
import sys, time, boto3
kib, n, body = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3], "rb").read()
s3, db = boto3.client("s3"), boto3.client("dynamodb")
table = f"peer-{kib}"
db.create_table(TableName=table, AttributeDefinitions=[{"AttributeName": "pipeline", "AttributeType": "S"}],
                KeySchema=[{"AttributeName": "pipeline", "KeyType": "HASH"}], BillingMode="PAY_PER_REQUEST")
db.put_item(TableName=table, Item={"pipeline": {"S": "p"}, "wal_seq": {"N": "0"}})
ms = []
start = time.perf_counter()
for seq in range(1, n + 1):
    t = time.perf_counter()
    s3.put_object(Bucket="peer", Key=f"boto-{kib}/{seq}", Body=body, IfNoneMatch="*")
    db.update_item(TableName=table, Key={"pipeline": {"S": "p"}}, UpdateExpression="SET wal_seq = :s",
                   ConditionExpression="wal_seq = :prev",
                   ExpressionAttributeValues={":s": {"N": str(seq)}, ":prev": {"N": str(seq - 1)}})
    ms.append(1000 * (time.perf_counter() - t))
seconds = time.perf_counter() - start
ms.sort()
print(f"boto3 PUT + conditional UpdateItem {kib} KiB: p50 {ms[len(ms) // 2]:.1f} ms, "
      f"p99 {ms[min(len(ms) - 1, len(ms) * 99 // 100)]:.1f} ms, {n / seconds:.1f} commits/s")
PY
done
