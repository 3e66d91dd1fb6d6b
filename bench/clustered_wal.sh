#!/usr/bin/env bash
# WAL_STORAGE=clustered against WAL_STORAGE=disk in the same run: commit latency (p50/p99) and batches/s at 64 KiB
# and 1 MiB, one commit after another as the engine's committer does. The clustered primary sends each batch to a
# `skipprd replica` over mutual TLS on loopback and fdatasyncs its own copy meanwhile; a commit returns once both
# copies are durable. Both copies sit on the same disk here (on two machines they would not compete for it), so
# the ratio is an upper bound of what the second copy costs, plus a loopback round trip.
# Knob: SKIPPR_BENCH_COMMITS (300).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$(cd "${1:-build}" && pwd)
COMMITS=${SKIPPR_BENCH_COMMITS:-300}
mkdir -p "${BENCH_DIR:-$BUILD/bench-data}"
dir=$(mktemp -d "${BENCH_DIR:-$BUILD/bench-data}/clustered.XXXXXX")
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pki="$dir/pki"
mkdir -p "$pki"
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$pki/ext"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=bench-ca -keyout "$pki/ca-key.pem" -out "$pki/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=bench-node -keyout "$pki/key.pem" -out "$pki/node.csr" 2>/dev/null
openssl x509 -req -in "$pki/node.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca-key.pem" -CAcreateserial -days 1 \
  -extfile "$pki/ext" -out "$pki/cert.pem" 2>/dev/null
export SKIPPR_CLUSTER_TLS_CERT="$pki/cert.pem" SKIPPR_CLUSTER_TLS_KEY="$pki/key.pem" SKIPPR_CLUSTER_TLS_CA="$pki/ca.pem"
DATA_DIR="$dir/peer" "$BUILD/skipprd" replica --listen "127.0.0.1:$port" >"$dir/replica.log" 2>&1 &
replica=$!
trap 'kill $replica 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
for kib in 64 1024; do
  WAL_STORAGE=disk DATA_DIR="$dir/local" "$BUILD/wal_commit_bench" "$kib" "$COMMITS"
  WAL_STORAGE=clustered SKIPPR_PEERS="127.0.0.1:$port" DATA_DIR="$dir/primary" \
    "$BUILD/wal_commit_bench" "$kib" "$COMMITS"
done
