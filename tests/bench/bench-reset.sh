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
build=$(realpath "${1:?usage: $0 BUILD_DIR [RUNS]}")
runs=${2:-5}
src=$(dirname "$(realpath "$0")")/../..
# shellcheck source=../lib/leftovers.sh
. "$src/tests/lib/leftovers.sh"
SIGN=$build/signing/seat-sign SEATD=$build/seatd/seatd CTL=$build/seatctl/seatctl
V=(virsh -q -c qemu:///system)

t=$(mktemp -d /var/tmp/seatd-bench-reset.XXXXXX)
chmod 0755 "$t"
seatd_pid= plain=
cleanup() {
  "${V[@]}" destroy "naive-bench-$$" >/dev/null 2>&1 || true
  [[ -n $plain ]] && "${V[@]}" destroy "$plain" >/dev/null 2>&1 || true
  [[ -n $seatd_pid ]] && { "$CTL" --json list 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)["seats"]]' 2>/dev/null | while read -r s; do "$CTL" -q release "$s" >/dev/null 2>&1; done; kill "$seatd_pid"; }
  wait 2>/dev/null; [[ -n ${BENCH_LOG:-} ]] && cp "$t/seatd.log" "$BENCH_LOG"; seat_leftovers_remove "$t/state"; rm -rf "$t"
}
trap cleanup EXIT
[[ -n ${BENCH_DEBUG:-} ]] && set -x
ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }
field() { "$CTL" --json status "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$2"; }
wait_standby() { for _ in $(seq 1 900); do [[ $(field "$1" warm_standby) == ready ]] && return 0; sleep 0.2; done; echo "no warm standby for $1: $(field "$1" warm_standby)" >&2; return 1; }
wait_agent() { # the channel's socket, then a hello answered
  python3 - "$1" <<'PY'
import socket, sys, time, re, subprocess
xml = subprocess.run(["virsh", "-q", "-c", "qemu:///system", "dumpxml", sys.argv[1]], capture_output=True, text=True).stdout
path = re.search(r"<channel type='unix'>\s*<source mode='bind' path='([^']+)'", xml).group(1)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(120)
        s.sendall(b'{"type":"hello","id":1,"version":1}\n')
        if b'"type":"hello"' in s.makefile("rb").readline(): sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit(1)
PY
}
gone() { for _ in $(seq 1 200); do "${V[@]}" domstate "$1" >/dev/null 2>&1 || return 0; sleep 0.05; done; return 1; }

mkdir -p "$t/keys"
"$SIGN" keygen -W -p "$t/keys/k.pub" -s "$t/k.key" >/dev/null 2>&1
"$src/images/recipes/test-image" --guest-init "$build/guest-init/guest-init" --out "$t/img" --quiet \
  --sign-key "$t/k.key" --tools "$build/images:$build/signing"
cat >"$t/seatd.conf" <<CONF
state_dir = $t/state
socket_path = $t/ctl.sock
trusted_keys_dir = $t/keys
accel = tcg
allow_tcg = true
inspect_images = false
CONF
# BENCH_LOG=FILE: seatd logs at debug level (with each reset's phases) and the log is kept there.
lvl=warning; [[ -n ${BENCH_LOG:-} ]] && lvl=debug
"$SEATD" -c "$t/seatd.conf" -l "$lvl" 2>"$t/seatd.log" &
seatd_pid=$!
export SEATD_SOCKET=$t/ctl.sock
for _ in $(seq 1 1200); do [[ -S $SEATD_SOCKET ]] && break; sleep 0.05; done
"$CTL" -q image import "$t/img/manifest.json" >/dev/null

# cold: a new slot each time; its saved state is made after the measurement, before the next.
cold=() warm=() restore=() naive=()
seat=
for i in $(seq 1 "$runs"); do
  a=$(ms); s=$("$CTL" -q --json provision --image test-image | python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])'); b=$(ms)
  cold+=($((b - a)))
  wait_standby "$s"
  if [[ -z $seat ]]; then seat=$s; else "$CTL" -q release "$s" >/dev/null; fi
done
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
  a=$(ms); "${V[@]}" restore "$wd/g$k.save" >/dev/null; wait_agent "$plain"; b=$(ms)
  restore+=($((b - a)))
  "${V[@]}" destroy "$plain" >/dev/null; gone "$plain"
done
rm -f "$wd/g$k.qcow2.tmp" "$wd/g$k.console.log"
plain=

# The naive cycle, on the same verified files, with the same domain settings.
blob() { "$CTL" --json image list | python3 -c "import json,sys; i=[x for x in json.load(sys.stdin)['images'] if x['name']=='test-image'][0]; print([f['identity'] for f in i['disks'] if f['file']=='$1'][0])"; }
store=$t/state/images/blobs
kernel=$store/$(blob vmlinux) initrd=$store/$(blob initramfs.img) base=$store/$(blob root.qcow2)
cmdline=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cmdline"])' "$t/img/image.json")
mkdir -p "$t/naive"
sed -e "s|@NAME@|naive-bench-$$|" -e "s|@MEMORY_MIB@|256|" -e "s|@KERNEL@|$kernel|" -e "s|@INITRD@|$initrd|" \
    -e "s|@CMDLINE@|$cmdline|" -e "s|@DISK@|$t/naive/overlay.qcow2|" -e "s|@CONSOLE_LOG@|$t/naive/console.log|" \
    "$src/images/recipes/test-domain.xml.in" >"$t/naive/domain.xml"
rm -f "$t/naive/overlay.qcow2"; qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$t/naive/overlay.qcow2"
"${V[@]}" create "$t/naive/domain.xml" >/dev/null; wait_agent "naive-bench-$$"
for i in $(seq 1 "$runs"); do
  a=$(ms)
  "${V[@]}" destroy "naive-bench-$$" >/dev/null
  rm -f "$t/naive/overlay.qcow2"; qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$t/naive/overlay.qcow2"
  "${V[@]}" create "$t/naive/domain.xml" >/dev/null
  wait_agent "naive-bench-$$"
  b=$(ms)
  naive+=($((b - a)))
done

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

c=$(printf '%s\n' "${cold[@]}" | median) w=$(printf '%s\n' "${warm[@]}" | median)
p=$(printf '%s\n' "${claim[@]}" | median)
r=$(printf '%s\n' "${restore[@]}" | median) n=$(printf '%s\n' "${naive[@]}" | median)
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
echo "cold provision-to-ready: ${cold[*]} ms (median $c)"
echo "warm reset-to-ready (seatctl reset, the whole reset as the participant waits): ${warm[*]} ms (median $w)"
echo "plain virsh restore of a saved state to agent hello: ${restore[*]} ms (median $r)"
echo "naive cycle (virsh destroy, new overlay, virsh create, agent hello): ${naive[*]} ms (median $n)"
echo "pool claim (seatctl provision from a ready pool): ${claim[*]} ms (median $p)"
echo "reset: cold_p50_ms=$c warm_p50_ms=$w warm_over_cold=$(ratio "$w" "$c") warm_over_virsh_restore=$(ratio "$w" "$r") cycle_over_naive=$(ratio "$w" "$n") claim_p50_ms=$p naive_p50_ms=$n"
