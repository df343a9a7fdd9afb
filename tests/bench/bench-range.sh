#!/usr/bin/env bash
# tests/bench/range: the purple range (images/recipes/purple-range) in one run:
#   image_build_s  seat-image build of the recipe, as this run found the cache
#                  (BENCH_RANGE_REBUILD=1: --rebuild, the Debian roots still from the cache)
#   cold_ready_ms  provision to READY: boot through systemd, dockerd and compose to the
#                  readiness check (every service running and healthy)
#   warm_reset_ms  seatctl reset to READY, restored from the slot's saved state (what a
#                  participant waits for; the state is saved once the readiness check
#                  passed in the standby machine), then the readiness check again
#   save_mib       the slot's saved state on disk (the .save file; the saved overlay apart)
#   qemu_rss_mib   the seat's QEMU resident set once READY
# Ends with: range: cold_ready_ms=N warm_reset_ms=N warm_over_cold=R save_mib=N qemu_rss_mib=N image_build_s=N
# Prints numbers; asserts nothing about time.   usage: bench-range.sh BUILD_DIR
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_workdir /var/tmp/seatd-bench-range 0755
CACHE=${SEAT_IMAGE_CACHE:-/var/cache/seatd-images}
field() { "$CTL" --json status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$2"; }
wait_standby() { for _ in $(seq 1 3000); do [[ $(field "$1" warm_standby) == ready ]] && return 0; sleep 0.5; done; echo "no warm standby for $1: $(field "$1" warm_standby)" >&2; return 1; }

test_key
rebuild=()
[[ ${BENCH_RANGE_REBUILD-0} == 1 ]] && rebuild=(--rebuild)
a=$(ms)
"$HARNESS_SRC/images/seat-image" build "$HARNESS_SRC/images/recipes/purple-range" --out "$t/img" --sign-key "$t/test.key" \
	--cache "$CACHE" --guest-init "$GUEST_INIT" --tools "$build/images:$build/signing" "${rebuild[@]}" 2>"$t/build.log" ||
	{ cat "$t/build.log" >&2; exit 1; }
build_s=$((($(ms) - a) / 1000))
grep -q "using the cached image" "$t/build.log" && how="from the cache" || how="built"
echo "image: $how in $build_s s; root.qcow2 $(du -m "$t/img/root.qcow2" | cut -f1) MiB on disk"

SEATD_LOG_LEVEL=debug # the reset's phases, below
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false ready_timeout=900
seatd_start
"$CTL" -q image import "$t/img/manifest.json" >/dev/null

a=$(ms)
seat=$("$CTL" -q --json provision --image purple-range --participant bench | json_field 'd["seats"][0]["id"]')
cold=$(($(ms) - a))
dom=$(field "$seat" domain)
rss=$(($(awk '/^VmRSS:/ {print $2}' "/proc/$(cat "/run/libvirt/qemu/$dom.pid")/status") / 1024))
echo "cold: $seat READY in $cold ms; QEMU RSS $rss MiB"

wait_standby "$seat"
a=$(ms)
"$CTL" -q reset "$seat" >/dev/null
warm=$(($(ms) - a))
mode=$(field "$seat" reset_mode)
echo "reset: $mode in $warm ms ($(field "$seat" reset_reason))"
[[ $mode == warm ]] || { echo "the reset was not warm" >&2; exit 1; }
# Where the reset's time went (seatd's log): the restore, the agent, the readiness check.
grep -E "seat '$seat': (restored at|agent up at|the image's readiness check passed)|saved the ready state" "$t/seatd.log" |
	sed 's/^/  /'
save=0
# The finished states only: the next identity's preparation is already under way beside
# them (its .tmp files come and go).
for f in "$t/state/warm/$seat"/g*.{save,qcow2,meta}; do
	[[ -f $f ]] || continue
	mib=$(du -m "$f" | cut -f1) bytes=$(stat -c %s "$f")
	echo "slot $seat: ${f##*/} $mib MiB on disk ($((bytes / 1048576)) MiB apparent)"
	[[ $f == *.save ]] && save=$((save > mib ? save : mib))
done
"$CTL" -q release "$seat" >/dev/null
echo "range: cold_ready_ms=$cold warm_reset_ms=$warm warm_over_cold=$(awk -v w="$warm" -v c="$cold" 'BEGIN {printf "%.3f", w / c}') save_mib=$save qemu_rss_mib=$rss image_build_s=$build_s"
