#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The network handover at a reset (issue #13, finding 6; docs/security.md). A seat's next
# machine has the last one's MAC and address on the same bridge, and its filter accepts
# replies (ct state established). Through a private seatd with an uplink into the test
# world (world.sh), one seat opens a UDP flow to the world's stream server (netprobe.py
# serve-udp-stream: it goes on sending to the flow's address), then the seat is reset:
#  - the next machine must receive nothing of that flow while the world still sends,
#  - conntrack (observed with the conntrack tool) must hold nothing for the guest's
#    address from before the reset,
#  - the seat's bridge must never forward to two ports during the reset: the last
#    machine's tap is off before the next one's comes (so it receives none of its traffic).
#
# usage: handover-vm.sh BUILD_DIR
set -uo pipefail

build=$(realpath "${1:?usage: $0 BUILD_DIR}")
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/leftovers.sh
. "$src/tests/lib/leftovers.sh"
SEATD=$build/seatd/seatd
CTL=$build/seatctl/seatctl
PROBE=$build/tests/network/guest-probe
VIRSH=(virsh -q -c qemu:///system)
for b in "$SEATD" "$CTL" "$PROBE" "$build/guest-init/guest-init" "$build/images/seat-manifest" "$build/signing/seat-sign"; do
  [[ -x $b ]] || { echo "1..0 # SKIP $b not built"; exit 0; }
done
[[ $(id -u) == 0 ]] || { echo "1..0 # SKIP needs root (libvirt, nftables, namespaces)"; exit 0; }
for c in virsh ip bridge nft python3 conntrack; do
  command -v "$c" >/dev/null || { echo "1..0 # SKIP $c is not installed (scripts/lib/host.sh installs it)"; exit 0; }
done

# shellcheck source=world.sh
. "$src/tests/network/world.sh"
host_start_libvirt >/dev/null 2>&1 || { echo "Bail out! libvirtd does not answer"; exit 1; }

UPLINK=sdw-up1
POOL=10.219.0.0/24
TABLE=5219
STREAM_PORT=8082
SPORT=45678
export WORLD_NS=seatd-w-hand WORLD_NET=10.255.1
t=$(mktemp -d /var/tmp/seatd-handover.XXXXXX)
chmod 0755 "$t"
seatd_pid= sampler=
export SEATD_SOCKET=$t/ctl.sock
unset SEATD_TOKEN

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
  [[ -s $t/out ]] && sed 's/^/#   /' "$t/out" | head -20
  return 0
}
diag() { echo "# $*"; }
bail() { echo "Bail out! $*"; [[ -f $t/seatd.log ]] && tail -30 "$t/seatd.log" | sed 's/^/# /'; exit 1; }

our_domains() {
  local d
  for d in $("${VIRSH[@]}" list --name 2>/dev/null); do
    [[ $d == seatd-* && $("${VIRSH[@]}" dumpxml "$d" 2>/dev/null) == *"file='$t/state/seats/"* ]] && echo "$d"
  done
}

cleanup() {
  local d
  [[ -n $sampler ]] && kill "$sampler" 2>/dev/null
  if [[ -n $seatd_pid ]]; then kill "$seatd_pid" 2>/dev/null; wait "$seatd_pid" 2>/dev/null; fi
  for d in $(our_domains); do "${VIRSH[@]}" destroy "$d" >/dev/null 2>&1; done
  for d in $("${VIRSH[@]}" net-list --name 2>/dev/null); do
    [[ $d == seatd-s* && -d $t/state/seats/${d#seatd-} ]] && "${VIRSH[@]}" net-destroy "$d" >/dev/null 2>&1
  done
  while ip rule del lookup $TABLE 2>/dev/null; do :; done
  ip route flush table $TABLE 2>/dev/null
  world_down >/dev/null 2>&1
  [[ -f $t/seatd.log ]] && cp "$t/seatd.log" "$build/meson-logs/handover-vm-seatd.log" 2>/dev/null
  seat_leftovers_remove "$t/state"; rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
guest_ip() { "$CTL" --json status "$1" | json_field 'd["network"]["guest"].split("/")[0]'; }
bridge_of() { "$CTL" --json status "$1" | json_field 'd["network"]["bridge"]'; }
probe() { local s=$1; shift; "$CTL" exec --timeout 60 "$s" -- /bin/guest-probe "$@" >"$t/out" 2>&1; }

# ---------------------------------------------------------------- the world and seatd
world_up "$UPLINK" >"$t/out" 2>&1 || { cat "$t/out"; bail "the test world did not come up"; }
world_serve "$WORLD_NS" serve-udp-stream "$WORLD_ALLOWED" $STREAM_PORT "$t/stream.log"
world_wait_listening "$WORLD_NS" 1 $STREAM_PORT >"$t/out" 2>&1 || { cat "$t/out"; bail "the stream server did not come up"; }
mkdir -p "$t/keys" "$t/state" "$t/egress"
"$build/signing/seat-sign" keygen -W -p "$t/test.pub" -s "$t/test.key" >/dev/null 2>&1 || bail "keygen failed"
cp "$t/test.pub" "$t/keys/"
"$src/images/recipes/test-image" --guest-init "$build/guest-init/guest-init" --out "$t/img" --quiet \
  --sign-key "$t/test.key" --tools "$build/images:$build/signing" --guest-tool "$PROBE" \
  >"$t/out" 2>&1 || { cat "$t/out"; bail "building the test image failed"; }
printf 'allow udp %s port %s\n' "$WORLD_ALLOWED" $STREAM_PORT >"$t/egress/stream.profile"
cat >"$t/seatd.conf" <<CONF
state_dir = $t/state
socket_path = $t/ctl.sock
trusted_keys_dir = $t/keys
accel = tcg
allow_tcg = true
inspect_images = false
net_pool = $POOL
uplink = $UPLINK
uplink_gateway = $WORLD_NET.2
route_table = $TABLE
route_priority = $TABLE
egress_dir = $t/egress
CONF
"$SEATD" -c "$t/seatd.conf" -l debug >>"$t/seatd.log" 2>&1 &
seatd_pid=$!
for _ in $(seq 1 600); do
  kill -0 "$seatd_pid" 2>/dev/null || bail "seatd exited"
  [[ -S $t/ctl.sock ]] && "$CTL" list >/dev/null 2>&1 && break
  sleep 0.1
done
"$CTL" list >/dev/null 2>&1 || bail "seatd did not start"
"$CTL" -q image import "$t/img/manifest.json" >"$t/out" 2>&1 || { cat "$t/out"; bail "image import failed"; }
"$CTL" -q provision --image test-image --egress stream >"$t/prov" 2>"$t/out" || { cat "$t/out"; bail "provision failed"; }
S=$(awk 'NR==2 {print $1}' "$t/prov")
[[ -n $S ]] || bail "no seat"
G=$(guest_ip "$S") BR=$(bridge_of "$S")
diag "seat $S: guest $G, bridge $BR"

ct_flow() { conntrack -L -p udp --orig-src "$G" --orig-port-src $SPORT 2>/dev/null | grep -c "dport=$STREAM_PORT" || true; }
ct_guest() { local o; for o in --orig-src --orig-dst --reply-src --reply-dst; do conntrack -L "$o" "$G" 2>/dev/null; done | sort -u; }
ticks() { wc -l <"$t/stream.log" 2>/dev/null || echo 0; }
forwarding_ports() { bridge -o link show 2>/dev/null | grep " master $BR " | grep -c "state forwarding" || true; }
# one sample: "FORWARDING DISABLED", the seat bridge's ports in each state
port_states() {
  bridge -o link show 2>/dev/null | awk -v br="$BR" '$0 ~ " master " br " " { if (/state forwarding/) f++; else if (/state disabled/) d++ }
    END { print f + 0, d + 0 }'
}

# ---------------------------------------------------------------- the flow, before the reset
T=(--timeout-ms 1500)
probe "$S" --sport $SPORT "${T[@]}" udp "$WORLD_ALLOWED" $STREAM_PORT && ct=$(ct_flow) && ((ct >= 1)) &&
  probe "$S" --timeout-ms 1500 listen-udp $SPORT \
  && ok "control: a UDP flow from the guest to the world's stream server: tracked ($ct), the world's ticks reach the guest ($(grep -o 'received=[0-9]*' "$t/out"))" \
  || not_ok "control: a UDP flow from the guest to the world's stream server is tracked and its ticks reach the guest"
[[ $(forwarding_ports) == 1 ]] && ok "control: the seat's bridge forwards to one port (the guest's tap)" \
  || not_ok "control: the seat's bridge forwards to one port (the guest's tap): $(forwarding_ports)"

# ---------------------------------------------------------------- the reset
# Dirty data for the old guest to sync when it is asked to power off: it stays up a while
# beside the start of the next machine (as it may for its whole grace, or on).
"$CTL" exec --timeout 120 "$S" -- dd if=/dev/zero of=/dirty bs=1M count=48 >"$t/out" 2>&1 \
  || diag "dd in the guest failed: $(tail -1 "$t/out")"
( for _ in $(seq 1 6000); do port_states; sleep 0.02; done ) >"$t/ports" 2>/dev/null &
sampler=$!
"$CTL" -q reset "$S" >"$t/out" 2>&1 && ok "reset" || not_ok "reset"
kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; sampler=
before=$(ticks)
probe "$S" --timeout-ms 3000 listen-udp $SPORT; rc=$?
after=$(ticks)
echo "world ticks sent meanwhile: $((after - before))" >>"$t/out"
[[ $rc == 1 ]] && grep -q 'received=0' "$t/out" && ((after - before >= 5)) \
  && ok "after the reset the new guest receives nothing of the last one's flow (the world sent $((after - before)) ticks meanwhile)" \
  || not_ok "after the reset the new guest receives nothing of the last one's flow (probe rc $rc, world ticks $((after - before)))"
left=$(ct_guest) ct=$(ct_flow)
echo "$left" >"$t/out"
[[ $ct == 0 && -z $left ]] && ok "after the reset conntrack holds nothing for the guest address $G" \
  || not_ok "after the reset conntrack holds nothing for the guest address $G (the flow: $ct entries)"
max=$(awk '{print $1}' "$t/ports" | sort -n | tail -1) samples=$(wc -l <"$t/ports")
disabled=$(awk '$2 > 0' "$t/ports" | wc -l)
sort "$t/ports" | uniq -c | sed 's/^ */samples (count, forwarding, disabled): /' >"$t/out"
[[ -n $max ]] && ((max == 1)) \
  && ok "during the reset the seat's bridge never forwarded to two ports ($samples samples): the last machine's tap was off before the next one's came" \
  || not_ok "during the reset the seat's bridge never forwarded to two ports (at most ${max:-?} in $samples samples)"
# Seen only while the old machine still runs after it was taken off, which may be for less
# than one sample here (it powers off fast): reported, not required.
diag "the last machine's tap seen as a disabled port in $disabled of $samples samples"
grep -q "seat=$S .*connection tracking entries of guest address $G removed" "$t/seatd.log" \
  && ok "seatd's log says how many entries of $G it removed" || { : >"$t/out"; not_ok "seatd's log says how many entries of $G it removed"; }

# ---------------------------------------------------------------- the next machine is whole
probe "$S" --sport $SPORT "${T[@]}" udp "$WORLD_ALLOWED" $STREAM_PORT \
  && ok "the new guest opens the same flow again: answered" || not_ok "the new guest opens the same flow again: answered"
"$CTL" -q release "$S" >"$t/out" 2>&1 && ok "release" || not_ok "release"
[[ -z $(ct_guest) ]] && ok "after the release conntrack holds nothing for $G (the next seat given the subnet starts clean)" \
  || { ct_guest >"$t/out"; not_ok "after the release conntrack holds nothing for $G"; }

echo "1..$n"
((failed == 0))
