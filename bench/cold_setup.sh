#!/usr/bin/env bash
# A new user's first `make run`, cold, on a Debian 12 machine that has none of the packages (issue 42: under 5 minutes
# on 2 cores). The "fresh machine" is a Debian 12 root made by debootstrap (its default variant: the required and
# important packages, what a minimal install has) with the apt sources a cloud image has (main, updates, security) and
# no apt lists (an image's lists are empty or stale, so the user's first step is `apt-get update`). In it, timed:
#   prereqs    apt-get update, then apt-get install of what the README's commands need before they can run (git to
#              clone, make to type `make run`), whichever of them the fresh root lacks
#   clone      git clone of the repository (from a local bare copy of this one's HEAD: not a network clone)
#   make run   as the README says, end to end, its output time-stamped to split it into: Debian packages
#              (install-deps.sh's apt-get), DuckDB from the npm registry (curl), cmake configure, the skipprd
#              build, the sample's sync
# debootstrap's own time is printed but is no part of the user's: it stands in for having a machine.
#   sudo bash bench/cold_setup.sh              the whole `make run`
#   sudo bash bench/cold_setup.sh --deps-only  `make deps-run` only (the install part, no compiling)
# Needs root (debootstrap, chroot, mounts), debootstrap, git, the Debian mirror and the npm registry; ~3 GB in $TMPDIR.
# Everything in the root runs under `nice -n 10` (the CPU is often shared). The build uses ccache as a fresh machine
# does (installed by install-deps.sh, its cache empty); CCACHE_DISABLE=1 in the environment is passed in to leave it
# out. The logs stay in the work folder it prints; KEEP_ROOT=1 leaves the root there too, for a look afterwards (its
# mounts are removed all the same).
set -euo pipefail
shopt -s inherit_errexit
REPO=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}  # the one tests/packaging's debootstrap uses

# `make bench` (bench/run.sh) runs every bench/*.sh with a build folder: this one is not a benchmark of a build (it
# needs root and a debootstrap, ~10 minutes), so it runs only when asked for by itself.
case "${1:-}" in
  "") TARGET=run ;;
  --deps-only) TARGET=deps-run ;;
  *)
    [ -d "$1" ] && { echo "cold_setup: skipped under make bench (run: sudo bash bench/cold_setup.sh)"; exit 0; }
    echo "usage: cold_setup.sh [--deps-only]" >&2
    exit 2
    ;;
esac
[ "$(id -u)" = 0 ] || { echo "cold_setup: needs root (debootstrap, chroot)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "cold_setup: debootstrap is missing (apt-get install debootstrap)" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/skippr-cold.XXXXXX")  # the logs, and the machine's root in it
chmod 755 "$work"
root=$work/root
sampler=""
mounts=()  # in mount order; unmounted in reverse
cleanup() {
  set +e
  [ -z "$sampler" ] || kill "$sampler" 2>/dev/null
  # A process still running in the root (gpg-agent or dirmngr from apt, a stray build) would keep its mounts busy:
  # end those, and only those, by their pid.
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill "${p#/proc/}" 2>/dev/null
  done
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}"
  done
  if grep -q " $root/" /proc/mounts; then
    echo "cold_setup: mounts left under $root, not removing it" >&2
  elif [ -n "${KEEP_ROOT:-}" ]; then
    echo "cold_setup: root and logs kept in $work"
  else
    rm -rf --one-file-system "$root"  # --one-file-system: never walks into a mount that was left behind
    echo "cold_setup: logs in $work"
  fi
}
trap cleanup EXIT
mnt() { mkdir -p "$root$2" && mount "${@:3}" "$1" "$root$2" && mounts+=("$root$2"); }

# elapsed seconds (one decimal) since the microsecond time $1
since() { local d=$(( ${EPOCHREALTIME/./} - $1 )); printf '%d.%d' $((d / 1000000)) $((d % 1000000 / 100000)); }
now() { echo "${EPOCHREALTIME/./}"; }
# in_root CMD...: a login-like root shell in the fresh machine: a clean environment, as a new user's terminal has.
in_root() {
  nice -n 10 chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin ${CCACHE_DISABLE:+CCACHE_DISABLE=$CCACHE_DISABLE} \
    ${extra_cas:+NODE_EXTRA_CA_CERTS=$extra_cas} \
    /bin/bash -c "$*" </dev/null
}

echo "cold_setup: $(uptime)"
echo "cold_setup: debootstrap bookworm into $root"
t=$(now)
nice -n 10 debootstrap bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }
t_debootstrap=$(since "$t")

# Turn the root into a freshly booted machine image: the sources a Debian 12 cloud image lists, no apt lists yet.
cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb ${MIRROR%/debian}/debian-security bookworm-security main
EOF
rm -rf "$root/var/lib/apt/lists/"* "$root/var/cache/apt/archives/"*.deb
cp /etc/resolv.conf "$root/etc/resolv.conf"
# The CAs this host added to its own trust (/usr/local/share/ca-certificates: a TLS-inspecting proxy's, on a network
# that has one; none on most machines): a machine on this network has them too, or https to the npm registry fails
# its certificate check. Placed where ca-certificates picks them up when it is installed (curl, in install-deps.sh),
# and given to Node (NODE_EXTRA_CA_CERTS), which keeps its own list; nothing more is installed in the root.
extra_cas=""
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/etc/ssl" "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  cat /usr/local/share/ca-certificates/*.crt >"$root/etc/ssl/host-extra-cas.pem"
  extra_cas=/etc/ssl/host-extra-cas.pem
fi
# A service a package starts would run on inside the chroot after it is gone (and hold its mounts): a real machine
# starts it, a chroot should not. Changes nothing that is installed.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod +x "$root/usr/sbin/policy-rc.d"
mnt proc /proc -t proc
mnt sysfs /sys -t sysfs
mnt /dev /dev --bind
mnt /dev/pts /dev/pts --bind
# The repository, as a bare copy of its HEAD (what a clone gets; the work tree's uncommitted changes are not in it).
git clone -q --bare "$REPO" "$root/srv/skipprd.git"
head=$(git -C "$REPO" rev-parse --short HEAD)

# What the fresh root lacks of what the README's two commands assume, and of what an https clone needs.
# shellcheck disable=SC2016  # the $c are for the root's shell
fresh_lacks=$(in_root 'for c in git make sudo curl; do command -v $c >/dev/null || printf "%s " $c; done
  [ -e /etc/ssl/certs/ca-certificates.crt ] || printf "ca-certificates "')
# shellcheck disable=SC2016
prereqs=$(in_root 'for c in git make; do command -v $c >/dev/null || printf "%s " $c; done')
packages_fresh=$(in_root "dpkg-query -W | wc -l")
echo "cold_setup: the fresh root ($packages_fresh packages) lacks: ${fresh_lacks:-nothing}"

# load average during the user's part, every 10 s
(while :; do echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)"; sleep 10; done) >"$work/load.log" &
sampler=$!
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

t=$(now)
in_root "apt-get update -q" >"$work/prereqs.log" 2>&1 || { cat "$work/prereqs.log" >&2; exit 1; }
t_update=$(since "$t")
t=$(now)
if [ -n "$prereqs" ]; then
  echo "cold_setup: apt-get install $prereqs(before the README's commands can run)"
  in_root "apt-get install -y -q $prereqs" >>"$work/prereqs.log" 2>&1 || { cat "$work/prereqs.log" >&2; exit 1; }
fi
t_prereqs=$(since "$t")
packages_prereqs=$(in_root "dpkg-query -W | wc -l")
debs_prereqs=$(du -sm "$root/var/cache/apt/archives" | cut -f1)

t=$(now)
in_root "git clone -q /srv/skipprd.git /root/skipprd"
t_clone=$(since "$t")

# `make run`, each output line stamped with the seconds since it started; the phases are found from the lines that
# begin them (install-deps.sh's own messages and make's echo of the cmake commands).
echo "cold_setup: make $TARGET (skipprd $head), log: $work/make.log"
t0=$(now)
set +e
# `times` then gives the CPU seconds make's processes used: unlike the wall time, not inflated by a shared CPU. (Into a
# file: in a pipe it would run in a subshell, whose children are none.)
in_root "cd /root/skipprd && make $TARGET; s=\$?; times >/tmp/cpu-times; exit \$s" 2>&1 |
  while IFS= read -r line; do printf '%7s  %s\n' "$(since "$t0")" "$line"; done >"$work/make.log"
status=${PIPESTATUS[0]}
set -e
t_make=$(since "$t0")
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null || true
sampler=""
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
packages_after=$(in_root "dpkg-query -W | wc -l")
debs_make=$(( $(du -sm "$root/var/cache/apt/archives" | cut -f1) - debs_prereqs ))

at() { awk -v re="$1" '$0 ~ re { print $1; exit }' "$work/make.log"; }  # the time of the first line matching $1
t_npm=$(at 'install-deps: fetching DuckDB')
t_configure=$(at ' cmake -S ')
t_build=$(at ' cmake --build ')
t_sample=$(at ' build/skipprd sync ')
# the CPU seconds (user + system) of the children's line of `times`: "9m2.5s 1m3.1s"
cpu=$(tail -1 "$root/tmp/cpu-times" | awk '{ for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } }
  END { printf "%.0f", t }')
span() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }' || echo "-"; }
end_deps=${t_configure:-$t_make}
[ "$TARGET" = run ] || end_deps=$t_make

echo
echo "== A fresh Debian 12 root, skipprd $head, $(nproc) cores; load before ${load_before}, after ${load_after}"
[ -z "$extra_cas" ] || echo "   (Node given this host's added CAs: $(grep -c "BEGIN CERT" "$root$extra_cas") certificates)"
awk 'NR == 1 { min = max = $2 } { sum += $2; if ($2 < min) min = $2; if ($2 > max) max = $2 }
     END { if (NR) printf "   1-min load average during it: mean %.2f, min %.2f, max %.2f (%d samples)\n", sum / NR, min, max, NR }' \
  "$work/load.log"
printf '%-46s %8s\n' phase seconds
printf '%-46s %8s\n' "(debootstrap: the machine itself, not counted)" "$t_debootstrap"
printf '%-46s %8s\n' "apt-get update" "$t_update"
printf '%-46s %8s\n' "apt-get install ${prereqs:-(nothing)}" "$t_prereqs"
printf '%-46s %8s\n' "git clone (local)" "$t_clone"
printf '%-46s %8s\n' "  install-deps: Debian packages" "$(span 0 "${t_npm:-$end_deps}")"
printf '%-46s %8s\n' "  install-deps: DuckDB (npm registry)" "$(span "$t_npm" "$end_deps")"
if [ "$TARGET" = run ]; then
  printf '%-46s %8s\n' "  cmake configure" "$(span "$t_configure" "$t_build")"
  printf '%-46s %8s\n' "  build skipprd" "$(span "$t_build" "$t_sample")"
  printf '%-46s %8s\n' "  the sample's sync" "$(span "$t_sample" "$t_make")"
fi
printf '%-46s %8s\n' "make $TARGET (exit $status)" "$t_make"
printf '%-46s %8s\n' "  its CPU seconds (user + system, all cores)" "${cpu:--}"
printf '%-46s %8s\n' "the user's total (update, prereqs, clone, make)" \
  "$(awk -v a="$t_update" -v b="$t_prereqs" -v c="$t_clone" -v d="$t_make" 'BEGIN { printf "%.1f", a + b + c + d }')"
echo "   packages: $packages_fresh fresh, $packages_prereqs after the prereqs, $packages_after after make $TARGET" \
  "(${debs_make} MB of .debs downloaded by it)"
if [ "$status" != 0 ]; then
  echo "cold_setup: make $TARGET failed in the root; the end of its log:" >&2
  tail -30 "$work/make.log" >&2
  exit 1
fi
tail -5 "$work/make.log"
