#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# "allow name" from inside a real seat (docs/egress.md "Names"): a private seatd with an
# uplink into the test world (world.sh), one seat whose profile allows names, its resolver
# libvirt's dnsmasq with seatd's options. From the guest (guest-probe through seatctl
# exec): an allowed name resolves and connects; a name not allowed gets NXDOMAIN and its
# address is dropped when dialled; a wildcard; names answering the metadata service or an
# address of the host get NXDOMAIN; DNS over TCP to the resolver; status lists the names;
# `nft flush set` on the seat's set pauses and re-protects it like a rule flush.
# The seat's DNS guard (started by seatd, as nobody): a CNAME into a name not allowed gets
# NXDOMAIN, its target's address lands in no set and stays dropped; malformed and
# oversized answers fail the lookup and add nothing; good lookups work after them; the
# guard goes with the seat.
#
# usage: names-vm.sh BUILD_DIR
set -uo pipefail

build=$(realpath "${1:?usage: $0 BUILD_DIR}")
src=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../lib/leftovers.sh
. "$src/tests/lib/leftovers.sh"
SEATD=$build/seatd/seatd
CTL=$build/seatctl/seatctl
PROBE=$build/tests/network/guest-probe
for b in "$SEATD" "$CTL" "$PROBE" "$build/guest-init/guest-init" "$build/images/seat-manifest" "$build/signing/seat-sign"; do
  [[ -x $b ]] || { echo "1..0 # SKIP $b not built"; exit 0; }
done
[[ $(id -u) == 0 ]] || { echo "1..0 # SKIP needs root (libvirt, nftables, namespaces)"; exit 0; }
for c in virsh ip nft python3 dnsmasq; do
  command -v "$c" >/dev/null || { echo "1..0 # SKIP $c is not installed"; exit 0; }
done
dnsmasq --version | grep -qw nftset || { echo "1..0 # SKIP this dnsmasq is built without nftset"; exit 0; }

# shellcheck source=world.sh
. "$src/tests/network/world.sh"
host_start_libvirt >/dev/null 2>&1 || { echo "Bail out! libvirtd does not answer"; exit 1; }

UPLINK=sdnv-up0
POOL=10.216.0.0/24
TABLE=5216
WORLD_NS=seatd-nv-out WORLD_NET=10.255.216
HOSTUP=$WORLD_NET.1 # the host's end of the uplink: an address of the host
WORLD_ZONE+=(a.wild.test=$WORLD_ALLOWED b.c.wild.test=$WORLD_ALLOWED hostaddr.test=$HOSTUP
  cname-in.allowed.test=cname:a.wild.test cname-out.allowed.test=cname:blocked.test
  malformed.allowed.test=malformed oversized.allowed.test=oversized)
t=$(mktemp -d /var/tmp/seatd-namesvm.XXXXXX)
chmod 0755 "$t"
seatd_pid=
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

cleanup() {
  if [[ -n $seatd_pid ]]; then kill "$seatd_pid" 2>/dev/null; wait "$seatd_pid" 2>/dev/null; fi
  seat_leftovers_remove "$t/state"
  while ip rule del lookup $TABLE 2>/dev/null; do :; done
  ip route flush table $TABLE 2>/dev/null
  ip route del $WORLD_DNS/32 2>/dev/null
  world_down >/dev/null 2>&1
  [[ -f $t/seatd.log ]] && cp "$t/seatd.log" "$build/meson-logs/names-vm-seatd.log" 2>/dev/null
  rm -rf "$t"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
denied() { "$CTL" --json status "$1" | json_field 'd["network"]["denied_packets"]'; }
probe() { local s=$1; shift; "$CTL" exec --timeout 60 "$s" -- /bin/guest-probe "$@" >"$t/out" 2>&1; }
denied_case() {
  local s=$1 d=$2; shift 2
  local before after
  before=$(denied "$s")
  probe "$s" "$@"; local rc=$?
  sleep 0.2
  after=$(denied "$s")
  echo "denied packets: $before -> $after" >>"$t/out"
  if [[ $rc == 1 && $after -gt $before ]]; then ok "$d (denied: +$((after - before)))"; else not_ok "$d (probe rc $rc, denied $before -> $after)"; fi
}

world_up "$UPLINK" >"$t/out" 2>&1 || { cat "$t/out"; bail "the test world did not come up"; }
# The seat's resolver runs on the host and asks the world's DNS server through the uplink.
ip route replace $WORLD_DNS/32 via $WORLD_NET.2 dev $UPLINK || bail "no host route to the world's DNS server"
mkdir -p "$t/keys" "$t/state" "$t/egress"
"$build/signing/seat-sign" keygen -W -p "$t/test.pub" -s "$t/test.key" >/dev/null 2>&1 || bail "keygen failed"
cp "$t/test.pub" "$t/keys/"
"$src/images/recipes/test-image" --guest-init "$build/guest-init/guest-init" --out "$t/img" --quiet \
  --sign-key "$t/test.key" --tools "$build/images:$build/signing" --guest-tool "$PROBE" \
  >"$t/out" 2>&1 || { cat "$t/out"; bail "building the test image failed"; }
cat >"$t/egress/names.profile" <<EOF
dns $WORLD_DNS
allow name allowed.test tcp port 8080
allow name *.wild.test tcp port 8080
allow name metadata.test tcp port 80
allow name hostaddr.test tcp port 8080
EOF
cat >"$t/seatd.conf" <<EOF
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
egress_check_interval = 2
tamper_resume = true
EOF
"$SEATD" -c "$t/seatd.conf" -l debug >>"$t/seatd.log" 2>&1 &
seatd_pid=$!
for _ in $(seq 1 600); do
  kill -0 "$seatd_pid" 2>/dev/null || bail "seatd exited"
  [[ -S $t/ctl.sock ]] && "$CTL" list >/dev/null 2>&1 && break
  sleep 0.1
done
"$CTL" -q image import "$t/img/manifest.json" >"$t/out" 2>&1 || { cat "$t/out"; bail "image import failed"; }
"$CTL" -q provision --image test-image --egress names >"$t/prov" 2>"$t/out" || { cat "$t/out"; bail "provision with names failed"; }
A=$(awk 'NR==2 {print $1}' "$t/prov")
[[ -n $A ]] || bail "no seat"
HA=$("$CTL" --json status "$A" | json_field 'd["network"]["host"]')
BRA=$("$CTL" --json status "$A" | json_field 'd["network"]["bridge"]')
diag "seat $A: resolver $HA, bridge $BRA"
T=(--timeout-ms 3000)

# An allowed name, and its address before it was resolved.
denied_case "$A" "the allowed server's address before its name was resolved: dropped" "${T[@]}" tcp "$WORLD_ALLOWED" 8080
probe "$A" "${T[@]}" dns "$HA" allowed.test && grep -q "rcode=NOERROR" "$t/out" && grep -q "a=$WORLD_ALLOWED" "$t/out" \
  && ok "allowed.test resolves through the seat's resolver ($HA)" || not_ok "allowed.test resolves through the seat's resolver"
probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
  && ok "allowed.test connects" || not_ok "allowed.test connects"
probe "$A" "${T[@]}" tcp "$HA" 53 && ok "DNS over TCP: the resolver's TCP port 53 accepts" || not_ok "DNS over TCP: the resolver's TCP port 53 accepts"
"$CTL" status "$A" >"$t/out" 2>&1
grep -qE "^name allowed.test \([1-9][0-9]* packets; tcp 8080\): $WORLD_ALLOWED \([0-9]+ s\)" "$t/out" \
  && ok "status lists the name, its packets and its address with the seconds left" || not_ok "status lists the name"

# Not allowed.
probe "$A" "${T[@]}" dns "$HA" blocked.test && grep -q "rcode=NXDOMAIN" "$t/out" \
  && ok "blocked.test gets NXDOMAIN" || not_ok "blocked.test gets NXDOMAIN"
denied_case "$A" "blocked.test's address dialled directly: dropped" "${T[@]}" tcp "$WORLD_BLOCKED" 8080
denied_case "$A" "the upstream resolver asked directly: dropped" "${T[@]}" dns "$WORLD_DNS" allowed.test

# A wildcard: every level below.
for name in a.wild.test b.c.wild.test; do
  probe "$A" "${T[@]}" --resolver "$HA" tcp $name 8080 --send hi --expect hi \
    && ok "wildcard *.wild.test: $name connects" || not_ok "wildcard *.wild.test: $name connects"
done
# Through the wildcard's own set: the same server is in allowed.test's set already, which
# alone would let those connections through (and once hid a wildcard set that stayed empty).
in_wild=$("$CTL" --json status "$A" | json_field "[x['address'] for m in d['network']['names'] if m['name'] == '*.wild.test' for x in m['addresses']]")
[[ $in_wild == *"'$WORLD_ALLOWED'"* ]] && ok "the wildcard's own set holds what its names answered ($in_wild)" \
  || { "$CTL" status "$A" >"$t/out" 2>&1; not_ok "the wildcard's own set holds what its names answered ($in_wild)"; }

# Rebinding to the metadata service and to an address of the host.
for c in metadata.test=$WORLD_METADATA hostaddr.test=$HOSTUP; do
  name=${c%=*} addr=${c#*=}
  probe "$A" "${T[@]}" dns "$HA" "$name" && grep -q "rcode=NXDOMAIN" "$t/out" \
    && ok "$name ($addr) gets NXDOMAIN" || not_ok "$name ($addr) gets NXDOMAIN"
  in_sets=$("$CTL" --json status "$A" | json_field "any(x['address'] == '$addr' for m in d['network']['names'] for x in m['addresses'])")
  [[ $in_sets == False ]] && ok "$name: $addr is in none of the seat's sets" || not_ok "$name: $addr is in none of the seat's sets ($in_sets)"
done

# The DNS guard between the seat's dnsmasq and the world's upstream, which answers
# cname-out.allowed.test with "CNAME blocked.test" and blocked.test's address.
in_any_set() {
  "$CTL" --json status "$A" | json_field "any(x['address'] == '$1' for m in d['network']['names'] for x in m['addresses'])"
}
GA=127.${HA#*.}
guard_pid=$(pgrep -f "seat-dnsguard --listen $GA ")
guard_user=$(ps -o user= -p "${guard_pid:-0}" | tr -d ' ')
[[ $guard_user == nobody ]] && ok "the seat's DNS guard runs, as nobody, on $GA" || not_ok "the seat's DNS guard runs as nobody on $GA ($guard_user)"
probe "$A" "${T[@]}" --resolver "$HA" tcp cname-in.allowed.test 8080 --send hi --expect hi \
  && ok "a CNAME into an allowed name (cname-in.allowed.test -> a.wild.test) resolves and connects" \
  || not_ok "a CNAME into an allowed name resolves and connects"
probe "$A" "${T[@]}" dns "$HA" cname-out.allowed.test && grep -q "rcode=NXDOMAIN" "$t/out" \
  && ok "a CNAME into a name not allowed (cname-out.allowed.test -> blocked.test) gets NXDOMAIN" \
  || not_ok "a CNAME into a name not allowed gets NXDOMAIN"
[[ $(in_any_set "$WORLD_BLOCKED") == False ]] && ok "cname-out: blocked.test's address is in none of the seat's sets" \
  || not_ok "cname-out: blocked.test's address is in none of the seat's sets"
denied_case "$A" "cname-out: blocked.test's address dialled after the lookup: dropped" "${T[@]}" tcp "$WORLD_BLOCKED" 8080
grep -q "NXDOMAIN for 'cname-out.allowed.test' (type 1): a CNAME to a name not allowed" "$t/seatd.log" \
  && ok "the guard's reason is in seatd's log" || not_ok "the guard's reason is in seatd's log"
for c in malformed=198.51.100.12 oversized=198.51.100.11; do
  name=${c%=*}.allowed.test addr=${c#*=}
  # SERVFAIL from the guard; over UDP dnsmasq (strict-order) lets the query time out
  probe "$A" "${T[@]}" dns "$HA" "$name"
  ! grep -q "a=" "$t/out" && grep -qE "rcode=SERVFAIL|reason=timeout" "$t/out" \
    && ok "a ${c%=*} answer ($name): the guest's lookup fails ($(grep -oE "rcode=SERVFAIL|reason=timeout" "$t/out"))" \
    || not_ok "a ${c%=*} answer ($name): the guest's lookup fails"
  [[ $(in_any_set "$addr") == False ]] && ok "$name: $addr is in none of the seat's sets" || not_ok "$name: $addr is in none of the seat's sets"
done
probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
  && ok "after those answers allowed.test still resolves and connects" || not_ok "after those answers allowed.test still resolves and connects"

# A set flushed behind seatd's back: paused and re-protected like a rule flush.
events() { "$CTL" --json status "$A" | json_field 'd["network"]["tamper_events"]'; }
e0=$(events)
nft flush set inet seatd "n40-$BRA"
for _ in $(seq 1 100); do (($(events) > e0)) && break; sleep 0.1; done
(($(events) > e0)) && ok "nft flush set on the seat's set: a tamper event ($(events))" || not_ok "nft flush set: a tamper event"
probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
  && ok "after the repair allowed.test resolves and connects again" || not_ok "after the repair allowed.test connects again"
denied_case "$A" "after the repair blocked.test's address is still dropped" "${T[@]}" tcp "$WORLD_BLOCKED" 8080

# The handover: a reset re-installs the rules, so the next guest starts with empty sets
# (and the resolver keeps no cache).
if "$CTL" -q reset "$A" >"$t/out" 2>&1; then
  empty=$("$CTL" --json status "$A" | json_field "all(not m['addresses'] for m in d['network']['names'])")
  [[ $empty == True ]] && ok "after a reset the name sets hold nothing of the last guest's lookups" \
    || not_ok "after a reset the name sets hold nothing of the last guest's lookups ($empty)"
  denied_case "$A" "after the reset the allowed server's address is dropped until the name is looked up" "${T[@]}" tcp "$WORLD_ALLOWED" 8080
  probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
    && ok "after the reset allowed.test resolves and connects" || not_ok "after the reset allowed.test connects"
else not_ok "reset of the seat with names"; fi

"$CTL" -q release "$A" >"$t/out" 2>&1
left=$(nft list table inet seatd 2>/dev/null | grep -c "seat-$A" || true)
[[ $left == 0 ]] && ok "release removes the seat's chains and sets" || not_ok "release removes the seat's chains and sets ($left lines left)"
pgrep -f "seat-dnsguard --listen $GA " >/dev/null && not_ok "release stops the seat's DNS guard" || ok "release stops the seat's DNS guard"

echo "1..$n"
((failed == 0))
