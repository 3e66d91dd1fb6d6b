#!/usr/bin/env bash
# Checks the Dockerfile's runtime stage without a container engine or a registry: a minimal Debian 12 root made by
# debootstrap (--variant=minbase, close to debian:12-slim) gets the package installed the way the Dockerfile does it,
# then runs the bikehire sample into DuckDB as the skipprd user with DATA_DIR=/var/lib/skipprd.
#   sudo bash packaging/docker/check-runtime-stage.sh build/skipprd_*.deb      (needs root, apt and the Debian mirror)
set -euo pipefail
deb="$(realpath "$1")"
root="$(mktemp -d)"
chmod 755 "$root"  # the skipprd user walks through it
# --one-file-system: a mount left behind (an umount that failed) is never walked into.
trap 'umount "$root/proc" 2>/dev/null || true; rm -rf --one-file-system "$root"' EXIT
command -v debootstrap >/dev/null || { echo "debootstrap is missing: bash scripts/install-deps.sh installs it" >&2; exit 2; }
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/"
mount -t proc proc "$root/proc"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
# The Dockerfile's RUN lines of the runtime stage.
chroot "$root" /bin/sh -c "apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/$(basename "$deb") \
  ca-certificates && rm -rf /var/lib/apt/lists/* /tmp/*.deb && install -d -m 0750 -o skipprd -g skipprd /var/lib/skipprd" \
  >"$root/apt.log" 2>&1 || { cat "$root/apt.log" >&2; exit 1; }
mkdir -p "$root/etc/skipprd"
cat >"$root/etc/skipprd/skippr.yml" <<'YML'
data_sources:
  sample:
    Sample: { rows: 100000, seed: 1 }
data_sinks:
  warehouse:
    DuckDB: { path: /var/lib/skipprd/bikehire.duckdb, table: trips }
pipelines:
  bikehire:
    data_source: data_sources.sample
    data_sink: data_sinks.warehouse
YML
# USER skipprd, WORKDIR /etc/skipprd, ENV DATA_DIR, ENTRYPOINT /usr/bin/skipprd.
chroot --userspec=skipprd:skipprd "$root" /usr/bin/env -i HOME=/var/lib/skipprd DATA_DIR=/var/lib/skipprd \
  PATH=/usr/bin:/bin sh -c 'cd /etc/skipprd && /usr/bin/skipprd sync --pipeline bikehire --once'
echo "runtime stage ok: $(chroot "$root" dpkg-query -W -f '${Package}\n' | wc -l) packages in the root"
