#!/usr/bin/env bash
# tests/bench/seal: the appliance a seal reads a guest's files with, under TCG. seatd-collect
# (as seatd starts it: unprivileged, the test image's root disk, one evidence path) against
# the same work through guestfish with libguestfs' own choices (its "-cpu max" and the
# host's compressed kernel; docs/evidence-format.md, "Guest files"), each from its own warm
# appliance cache. Medians of RUNS runs of each, alternating; prints numbers, asserts
# nothing about time.
#   usage: bench-seal.sh BUILD_DIR [RUNS]
# Last line:
#   seal: appliance_up_s=N collect_s=N guestfish_default_s=N collect_over_guestfish=R
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [RUNS]}"
runs=${2:-5}
COLLECT=$build/seatd/seatd-collect
need_built "$COLLECT"
need_cmd -h libguestfs-tools guestfish
[[ -f $build/images/root.qcow2 ]] || ninja -C "$build" images/image.json >/dev/null
harness_workdir /var/tmp/seatd-bench-seal 0755

# The disk (qcow2, an ext4 filesystem on the whole disk), readable by nobody; the caches
# as seatd/collect.c hands them over: passable, the user's own part inside.
cp "$build/images/root.qcow2" "$t/disk.qcow2" && chmod 0644 "$t/disk.qcow2"
mkdir -m 0711 "$t/cache" && install -d -m 0755 -o nobody -g nogroup "$t/cache/.guestfs-$(id -u nobody)" "$t/gf-cache"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
now() { echo "${EPOCHREALTIME/,/.}"; }

# collect: seatd-collect's own "appliance up in N s" (its debug log) and its whole run
collect() { # N -> "UP WALL"
  local s=$t/staging-$1 a b
  install -d -m 0700 -o nobody -g nogroup "$s"
  a=$(now)
  as_nobody env SEATD_COLLECT_DEBUG=1 "$COLLECT" "$t/disk.qcow2" - "$s" "$t/cache" 1048576 1048576 10 1 bench /init \
    >"$t/collect.out" 2>"$t/collect.err" || { cat "$t/collect.err" >&2; bail "seatd-collect failed"; }
  b=$(now)
  grep -q '"result":"ok"' "$t/collect.out" || { cat "$t/collect.out" "$t/collect.err" >&2; bail "seatd-collect did not read the disk"; }
  echo "$(sed -n 's/.*appliance up in \([0-9.]*\) s.*/\1/p' "$t/collect.err" | head -1) $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", b - a}')"
}
# guestfish: the same disk, filesystem and file, libguestfs' defaults under TCG
guestfish_default() {
  local a b
  a=$(now)
  as_nobody env LIBGUESTFS_BACKEND=direct LIBGUESTFS_BACKEND_SETTINGS=force_tcg LIBGUESTFS_CACHEDIR="$t/gf-cache" \
    guestfish --ro --format=qcow2 -a "$t/disk.qcow2" -- set-memsize 384 : set-smp 1 : run : mount-ro /dev/sda / : \
    is-file /init >"$t/gf.out" 2>&1 || { cat "$t/gf.out" >&2; bail "guestfish failed"; }
  b=$(now)
  awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f\n", b - a}'
}

echo "building both appliances (not counted) ..." >&2
collect 0 >/dev/null
guestfish_default >/dev/null
up=() cw=() gw=()
for i in $(seq 1 "$runs"); do
  collect "$i" >"$t/c"
  read -r u w <"$t/c"
  up+=("$u") cw+=("$w")
  gw+=("$(guestfish_default)")
done
mu=$(printf '%s\n' "${up[@]}" | median) mc=$(printf '%s\n' "${cw[@]}" | median) mg=$(printf '%s\n' "${gw[@]}" | median)
echo "seatd-collect: appliance up in ${up[*]} s (median $mu), whole run ${cw[*]} s (median $mc)"
echo "guestfish with libguestfs' defaults: ${gw[*]} s (median $mg)"
echo "seal: appliance_up_s=$mu collect_s=$mc guestfish_default_s=$mg collect_over_guestfish=$(awk -v a="$mc" -v b="$mg" 'BEGIN {printf "%.2f", a / b}')"
