#!/usr/bin/env bash
# Installs what the build and the tests need: Debian packages, and DuckDB's C library and header from the npm registry (DuckDB has
# no Debian package). Idempotent: a second run only checks.
#   install-deps.sh run    what building and running skipprd needs (`make run`): compilers and the libraries it links
#   install-deps.sh        (or `test`) that and everything the tests need: the servers they start, the tools they
#                          check with, the emulators' packages (`make test`)
set -euo pipefail
cd "$(dirname "$0")/.."
FOR=${1:-test}
case "$FOR" in run | test) ;; *) echo "install-deps: usage: install-deps.sh [run|test]" >&2; exit 2 ;; esac

# Building and running skipprd: the compilers, and one -dev package per library the core links (CMakeLists.txt).
DEBIAN_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  curl ca-certificates                                    # DuckDB's two tarballs from the npm registry (below)
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev libfmt-dev libspdlog-dev libzstd-dev libsimdjson-dev
  zlib1g-dev                                              # gzip: files, HTTP bodies
  libssl-dev                                              # hashes and signatures: SigV4, JWTs, the cluster's TLS
  libavro-dev                                             # lakes: Iceberg manifests are Avro files
)
# What each connector and client links (DEBIAN) and what its tests start or check with (TEST_DEBIAN), declared in
# its own folder: src/{sources,sinks}/<name>/connector.cmake, src/clients/<name>/client.cmake.
declared() {  # declared KEYWORD: the packages of every declaration's KEYWORD line (one keyword per line)
  sed -n "s/^[[:space:]]*$1[[:space:]]\{1,\}\([^#)]*\).*/\1/p" src/clients/*/client.cmake src/sources/*/connector.cmake \
    src/sinks/*/connector.cmake | tr -s ' \t' '\n' | sed '/^$/d' | sort -u
}
mapfile -t -O "${#DEBIAN_PACKAGES[@]}" DEBIAN_PACKAGES < <(declared DEBIAN)
if [ "$FOR" = test ]; then
  mapfile -t -O "${#DEBIAN_PACKAGES[@]}" DEBIAN_PACKAGES < <(declared TEST_DEBIAN)
  DEBIAN_PACKAGES+=(libcpp-httplib-dev)  # the tests' own HTTP servers and clients (emulators, probes)
  DEBIAN_PACKAGES+=(clang-format libgtest-dev pybind11-dev python3-dev python3-pytest)  # tests, Python module
  DEBIAN_PACKAGES+=(python3-venv)  # the wheel test installs `make wheel`'s file into a fresh venv
  DEBIAN_PACKAGES+=(time)  # walperf: /usr/bin/time -v measures peak RSS in bench/duckdb.sh
  DEBIAN_PACKAGES+=(postgresql-15 postgresql-client-15)  # the state and engine tests' servers, besides the connectors'
  DEBIAN_PACKAGES+=(spin)  # model/: the Spin model checker for the protocol's Promela models
  DEBIAN_PACKAGES+=(chromium)  # skipprd serve's status page, loaded in headless Chromium by tests/serve
  DEBIAN_PACKAGES+=(systemd dpkg-dev)  # packaging tests: systemd-analyze verify, dpkg-shlibdeps for cpack's Depends
  DEBIAN_PACKAGES+=(debootstrap)  # packaging tests: a minimal Debian 12 root for the Dockerfile's runtime stage
  DEBIAN_PACKAGES+=(openssl)  # clustered mode: the tests make a throwaway CA and certificates with the openssl command
fi
# The tests' Node.js tools (azurite, icebird) come through npm; the machine may already have Node.js from elsewhere,
# which Debian's npm would conflict with. `make run` needs neither: Node.js and npm are 500 packages, 40 s of apt.
if [ "$FOR" = test ]; then command -v npm >/dev/null || DEBIAN_PACKAGES+=(nodejs npm); fi
missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  # The servers the tests start privately (PostgreSQL, MariaDB, ...) are not started as system services by their
  # packages: a policy-rc.d that refuses every start while apt runs (the tests use free ports of their own).
  policy=/usr/sbin/policy-rc.d
  placed=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy" && placed=yes
    trap '$SUDO rm -f "$policy"' EXIT  # gone even when the install fails (set -e)
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
  }
  [ -z "$placed" ] || { $SUDO rm -f "$policy"; trap - EXIT; }
fi

# promtool (Debian's prometheus package) checks the /metrics exposition in the tests. Installed without its
# recommends (node-exporter) and without starting the Prometheus service its package would start.
if [ "$FOR" = test ] && ! command -v promtool >/dev/null; then
  echo "install-deps: installing prometheus (for promtool)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  policy=/usr/sbin/policy-rc.d
  placed=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod +x "$policy" && placed=yes
    trap '$SUDO rm -f "$policy"' EXIT  # gone even when the install fails (set -e)
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends prometheus >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends prometheus
  }
  [ -z "$placed" ] || { $SUDO rm -f "$policy"; trap - EXIT; }
  # A system without policy-rc.d support (systemd) may have started it: it is not needed.
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
# DuckDB: libduckdb.so from the prebuilt node bindings, duckdb.h from the duckdb package of the same version.
DUCKDB_VERSION=1.4.4
DUCKDB_BINDINGS=1.4.4-r.4
DEST=third_party/duckdb
if [ ! -f "$DEST/lib/libduckdb.so" ] || [ ! -f "$DEST/include/duckdb.h" ] || \
   [ "$(cat "$DEST/VERSION" 2>/dev/null)" != "$DUCKDB_BINDINGS" ]; then
  echo "install-deps: fetching DuckDB $DUCKDB_VERSION from the npm registry"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # The registry's tarballs, fetched by URL (curl says why when it fails) and checked against the digests pinned here.
  NPM_REGISTRY=${NPM_REGISTRY:-https://registry.npmjs.org}
  curl -fsSL --retry 3 -o "$tmp/duckdb-node-bindings-linux-x64-$DUCKDB_BINDINGS.tgz" \
    "$NPM_REGISTRY/@duckdb/node-bindings-linux-x64/-/node-bindings-linux-x64-$DUCKDB_BINDINGS.tgz"
  curl -fsSL --retry 3 -o "$tmp/duckdb-$DUCKDB_VERSION.tgz" "$NPM_REGISTRY/duckdb/-/duckdb-$DUCKDB_VERSION.tgz"
  (cd "$tmp" && sha256sum --quiet -c - <<SUMS) || { echo "install-deps: DuckDB's tarballs differ from the pinned digests" >&2; exit 1; }
732fac4dc6b8f198870b9c4bb6ddf13544466daca00ad28ba2f1d80de5d7aa4b  duckdb-node-bindings-linux-x64-$DUCKDB_BINDINGS.tgz
5bb967dcbcd517670ba5f169f238fb9d6787e53752c60ebe24386169d76941ed  duckdb-$DUCKDB_VERSION.tgz
SUMS
  mkdir -p "$DEST/lib" "$DEST/include"
  tar -xzf "$tmp"/duckdb-node-bindings-linux-x64-*.tgz -C "$tmp" package/libduckdb.so
  mv "$tmp/package/libduckdb.so" "$DEST/lib/"
  tar -xzf "$tmp/duckdb-$DUCKDB_VERSION.tgz" -C "$tmp" package/src/duckdb/src/include/duckdb.h
  mv "$tmp/package/src/duckdb/src/include/duckdb.h" "$DEST/include/"
  echo "$DUCKDB_BINDINGS" > "$DEST/VERSION"
fi

[ "$FOR" = test ] || exit 0  # what follows only the tests use

# Azurite (the Azure Storage emulator) for the AzureBlob sink's tests: 3.35.0 is the last release that runs on Node 20.
AZURITE_VERSION=3.35.0
if [ "$(node -p "require('./third_party/azurite/node_modules/azurite/package.json').version" 2>/dev/null)" != \
     "$AZURITE_VERSION" ]; then
  echo "install-deps: fetching azurite $AZURITE_VERSION from the npm registry"
  npm install --silent --no-audit --no-fund --prefix third_party/azurite "azurite@$AZURITE_VERSION" >/dev/null
fi

# icebird (with hyparquet): an Iceberg reader of its own, which the lake tests read SkipprLake's tables with.
ICEBIRD_VERSION=0.3.1
if [ "$(node -p "require('./third_party/icebird/node_modules/icebird/package.json').version" 2>/dev/null)" != \
     "$ICEBIRD_VERSION" ]; then
  echo "install-deps: fetching icebird $ICEBIRD_VERSION from the npm registry"
  npm install --silent --no-audit --no-fund --prefix third_party/icebird "icebird@$ICEBIRD_VERSION" >/dev/null
fi
