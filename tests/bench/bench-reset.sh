#!/usr/bin/env bash
# tests/bench/reset: for the test image, medians over RUNS in one run of the bench:
#   cold   provision to READY (a new slot boots from the image)
#   warm   seatctl reset to READY, restored from the slot's saved state: this is the whole
#          reset as a participant waits for it (the old guest is killed at its start, its
#          libvirt teardown finishes beside the new machine)
#   virsh_restore  a plain `virsh restore` of the same kind of saved state until its agent
#          answers hello (no new identity, no seatd)
#   naive  virsh destroy / new overlay / virsh create / wait for the agent
#   claim  seatctl provision answered from a pool of ready seats (docs/pools.md), the pool
#          full before each claim (its refill boots after the measurement)
# Prints numbers; asserts nothing about time.
#   usage: bench-reset.sh BUILD_DIR [RUNS]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [RUNS]}"
runs=${2:-5}
V=("${VIRSH[@]}")
# (the harness's cleanup removes the seats, their networks and the work directory)
harness_workdir /var/tmp/seatd-bench-reset 0755
plain=
harness_on_exit '[[ -z $plain ]] || "${V[@]}" destroy "$plain" >/dev/null 2>&1'
# BENCH_LOG=FILE: seatd logs at debug level (with each reset's phases) and the log is kept there.
[[ -n ${BENCH_DEBUG:-} ]] && set -x
field() { "$CTL" --json status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$2"; }
wait_standby() { for _ in $(seq 1 900); do [[ $(field "$1" warm_standby) == ready ]] && return 0; sleep 0.2; done; echo "no warm standby for $1: $(field "$1" warm_standby)" >&2; return 1; }
gone() { for _ in $(seq 1 200); do "${V[@]}" domstate "$1" >/dev/null 2>&1 || return 0; sleep 0.05; done; return 1; }

bench_seatd

# cold: a new slot each time; its saved state is made after the measurement, before the next.
warm=() restore=()
bench_provisions "$runs" wait_standby
cold=("${prov[@]}")
# warm: the same seat reset again and again, its standby state ready before each.
for i in $(seq 1 "$runs"); do
  wait_standby "$seat"
  a=$(ms); "$CTL" -q reset "$seat" >/dev/null; b=$(ms)
  [[ $(field "$seat" reset_mode) == warm ]] || { echo "reset $i of $seat was not warm: $(field "$seat" reset_reason)" >&2; exit 1; }
  warm+=($((b - a)))
done
# virsh restore of the seat's standby state, as saved (its overlay where it was made).
wait_standby "$seat"
dom=$(field "$seat" domain)
k=$([[ $dom == *-g1 ]] && echo 2 || echo 1)
plain=${dom%-g*}-g$k
wd=$t/state/warm/$seat
for i in $(seq 1 "$runs"); do
  rm -f "$wd/g$k.qcow2.tmp"; cp "$wd/g$k.qcow2" "$wd/g$k.qcow2.tmp"
  # seatd boots each machine from copies of the kernel and initrd beside its overlay (its
  # own QEMU uid's), removed once the machine runs: the state names them, as it was made.
  cp "$(image_blob vmlinux)" "$wd/g$k.qcow2.tmp.kernel"; cp "$(image_blob initramfs.img)" "$wd/g$k.qcow2.tmp.initrd"
  a=$(ms); "${V[@]}" restore "$wd/g$k.save" >/dev/null; wait_agent "$plain"; b=$(ms)
  restore+=($((b - a)))
  "${V[@]}" destroy "$plain" >/dev/null; gone "$plain"
done
rm -f "$wd/g$k.qcow2.tmp" "$wd/g$k.qcow2.tmp.kernel" "$wd/g$k.qcow2.tmp.initrd" "$wd/g$k.console.log"
plain=

# The naive cycle, on the same verified files, with the same domain settings.
bench_naive "$runs"

"${V[@]}" destroy "naive-bench-$$" >/dev/null 2>&1 || true

# claim: provision answered from a pool of one ready seat, the pool refilled before each.
claim=()
pool_ready() { "$CTL" --json pool status | python3 -c 'import json,sys; p=json.load(sys.stdin)["pools"]; print(p[0]["ready"] if p else 0)'; }
"$CTL" -q pool set test-image --ready 1 >/dev/null
for i in $(seq 1 "$runs"); do
  for _ in $(seq 1 1800); do [[ $(pool_ready) == 1 ]] && break; sleep 0.1; done
  a=$(ms); out=$("$CTL" -q --json provision --image test-image --participant bench); b=$(ms)
  [[ $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seats"][0].get("from_pool"))' "$out") == True ]] \
    || { echo "provision $i was not answered from the pool" >&2; exit 1; }
  claim+=($((b - a)))
  "$CTL" -q release "$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seats"][0]["id"])' "$out")" >/dev/null
done
"$CTL" -q pool set test-image --ready 0 >/dev/null

c=$(printf '%s\n' "${cold[@]}" | median_int) w=$(printf '%s\n' "${warm[@]}" | median_int)
p=$(printf '%s\n' "${claim[@]}" | median_int)
r=$(printf '%s\n' "${restore[@]}" | median_int) n=$(printf '%s\n' "${naive[@]}" | median_int)
echo "cold provision-to-ready: ${cold[*]} ms (median $c)"
echo "warm reset-to-ready (seatctl reset, the whole reset as the participant waits): ${warm[*]} ms (median $w)"
echo "plain virsh restore of a saved state to agent hello: ${restore[*]} ms (median $r)"
echo "naive cycle (virsh destroy, new overlay, virsh create, agent hello): ${naive[*]} ms (median $n)"
echo "pool claim (seatctl provision from a ready pool): ${claim[*]} ms (median $p)"
echo "reset: cold_p50_ms=$c warm_p50_ms=$w warm_over_cold=$(ratio "$w" "$c") warm_over_virsh_restore=$(ratio "$w" "$r") cycle_over_naive=$(ratio "$w" "$n") claim_p50_ms=$p naive_p50_ms=$n"
