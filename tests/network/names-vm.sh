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
# Its supervision (issue 18): a guard killed is restarted on its address (status: pid,
# state, restarts, why it exited; seatd's log); one that keeps dying is left stopped past
# 10 restarts in 60 s and the seat is paused; a reset starts it again. Adoption: seatd
# stopped (the guard goes with it) or killed (the guard exits by itself), then started:
# the seat is adopted with a new guard, its sets read back and watched, names resolve and
# connect, others get NXDOMAIN; the adopting seatd supervises the guard.
# A guard that hangs before it is ready (a seat-dnsguard beside a copy of seatd that stands
# still once): on a restart it is killed after 5 s, counted, and restarted, names closed
# meanwhile; at provision the provision fails saying so, and leaves no seat, domain, chain,
# set or bridge.
#
# usage: names-vm.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
PROBE=$build/tests/network/guest-probe
harness_vm_suite names-vm "$PROBE"
need_cmd virsh ip nft python3 dnsmasq pgrep
grep -qw nftset <<<"$(dnsmasq --version)" || skip_all "this dnsmasq is built without nftset"

# shellcheck source=world.sh
. "$HARNESS_SRC/tests/network/world.sh"
# shellcheck source=seat-probe.sh
. "$HARNESS_SRC/tests/network/seat-probe.sh"
need_libvirt --start

UPLINK=sdnv-up0
POOL=10.216.0.0/24
TABLE=5216
WORLD_NS=seatd-nv-out WORLD_NET=10.255.216
HOSTUP=$WORLD_NET.1 # the host's end of the uplink: an address of the host
WORLD_ZONE+=(a.wild.test=$WORLD_ALLOWED b.c.wild.test=$WORLD_ALLOWED hang.wild.test=$WORLD_ALLOWED hostaddr.test=$HOSTUP
  cname-in.allowed.test=cname:a.wild.test cname-out.allowed.test=cname:blocked.test
  malformed.allowed.test=malformed oversized.allowed.test=oversized)
unset SEATD_TOKEN

world_seatd "$UPLINK" "$POOL" "$TABLE"
harness_on_exit --late "ip route del $WORLD_DNS/32 2>/dev/null"
world_up "$UPLINK" >"$t/out" 2>&1 || { cat "$t/out"; bail "the test world did not come up"; }
# The seat's resolver runs on the host and asks the world's DNS server through the uplink.
ip route replace $WORLD_DNS/32 via $WORLD_NET.2 dev $UPLINK || bail "no host route to the world's DNS server"
cat >"$t/egress/names.profile" <<EOF
dns $WORLD_DNS
allow name allowed.test tcp port 8080
allow name *.wild.test tcp port 8080
allow name metadata.test tcp port 80
allow name hostaddr.test tcp port 8080
EOF
seatd_conf accel=tcg allow_tcg=true inspect_images=false "${world_seatd_keys[@]}" egress_check_interval=2 tamper_resume=true
seatd_start
image_import --guest-tool "$PROBE"
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
guard_pid=$(pgrep --ns $$ --nslist pid -f "seat-dnsguard --listen $GA ")
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
wait_until 'e=$(events); ((${e:-0} > e0))'
(($(events) > e0)) && ok "nft flush set on the seat's set: a tamper event ($(events))" || not_ok "nft flush set: a tamper event"
probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
  && ok "after the repair allowed.test resolves and connects again" || not_ok "after the repair allowed.test connects again"
denied_case "$A" "after the repair blocked.test's address is still dropped" "${T[@]}" tcp "$WORLD_BLOCKED" 8080

# ---------------------------------------------------------------- the guard supervised
# A guard that dies is restarted on the same address, after a short delay, and says why.
gfield() { "$CTL" --json status "$A" | json_field "d['network']['dnsguard'].get('$1', '')"; }
# (this PID namespace's only: a fresh root's names-vm on this host runs its guards on the
# same addresses, and pgrep sees into it)
guard_of() { pgrep --ns $$ --nslist pid -f "seat-dnsguard --listen $GA " | head -1; }
# wait_guard OLD_PID: until the guard runs with another pid, or failed. (The bound only
# catches a hang: a restart waits up to 5 s of back-off, then a guard's start, which a
# loaded host or a sanitizer slows many times over.)
wait_guard() {
  local st
  for _ in $(seq 1 1200); do
    st=$(gfield state)
    [[ $st == failed ]] && return 0
    [[ $st == running && $(gfield pid) != "$1" ]] && return 0
    sleep 0.1
  done
  return 1
}
p0=$(gfield pid)
[[ $(gfield state) == running && $p0 == "$(guard_of)" && $(gfield restarts) == 0 ]] \
  && ok "status shows the guard running (pid $p0, 0 restarts)" || not_ok "status shows the guard running (pid $p0: $(gfield state))"
kill -9 "$p0"
if wait_guard "$p0"; then
  p1=$(gfield pid)
  [[ $(gfield state) == running && $p1 == "$(guard_of)" && $(ps -o user= -p "$p1" | tr -d ' ') == nobody ]] \
    && ok "a guard killed with SIGKILL is restarted on $GA:53, as nobody (pid $p0 -> $p1)" \
    || not_ok "a killed guard is restarted on $GA:53 as nobody ($(gfield state), pid $p1, running $(guard_of))"
else not_ok "a guard killed with SIGKILL is restarted (status: $(gfield state))"; fi
[[ $(gfield restarts) == 1 && $(gfield last_exit) == "killed by signal 9 (Killed)" ]] \
  && ok "status counts the restart and says why it exited ($(gfield last_exit))" \
  || not_ok "status counts the restart ($(gfield restarts)) and says why it exited ($(gfield last_exit))"
grep -q "seat '$A': its DNS guard (seat-dnsguard on $GA:53) (pid $p0) killed by signal 9 (Killed): restarting it in 200 ms" "$t/seatd.log" \
  && ok "seatd's log says the guard was killed and when it restarts it" || not_ok "seatd's log says the guard was killed"
"$CTL" status "$A" >"$t/out" 2>&1
grep -q "^dnsguard: running on $GA:53, pid $(gfield pid), 1 restarts, last exit: killed by signal 9 (Killed)$" "$t/out" \
  && ok "seatctl status shows the guard's pid, state and restarts" || not_ok "seatctl status shows the guard"
probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
  && ok "after the restart allowed.test resolves and connects" || not_ok "after the restart allowed.test resolves and connects"
probe "$A" "${T[@]}" dns "$HA" cname-out.allowed.test && grep -q "rcode=NXDOMAIN" "$t/out" \
  && ok "after the restart the guard still refuses a CNAME out of the names" || not_ok "after the restart cname-out gets NXDOMAIN"

# A guard that keeps dying: past 10 restarts in a row (none of them up for 30 s), or 10
# within 60 s, it is not restarted, and the seat is paused as after a rule flush (fail
# closed, and loud). Which of the two is reached first depends on how fast this host is;
# the count of kills does not.
kills=0 t0=$(ms)
while [[ $(gfield state) == running ]] && ((kills < 15)); do
  p=$(gfield pid)
  kill -9 "$p"; kills=$((kills + 1))
  wait_guard "$p" || break
done
st=$(gfield state)
diag "guard: $st after $kills more kills in $(($(ms) - t0)) ms"
[[ $st == failed && $kills -le 11 && -z $(guard_of) ]] \
  && ok "past 10 restarts the guard is not restarted (state failed after $kills more kills)" \
  || not_ok "past the cap the guard is not restarted (state $st after $kills kills, running: $(guard_of))"
[[ $(gfield error) =~ seat-dnsguard\ on\ $GA:53.*after\ 10\ restarts\ (within\ 60\ s|in\ a\ row,\ none\ of\ them\ up\ for\ 30\ s) ]] \
  && ok "status says why, naming the guard ($(gfield error))" || not_ok "status says why, naming the guard ($(gfield error))"
dom=$("$CTL" --json status "$A" | json_field 'd["domain"]')
paused=$("$CTL" --json status "$A" | json_field 'd["network"]["paused"]')
"$CTL" exec "$A" -- true >"$t/out" 2>&1; rc=$?
[[ $paused == True && $("${VIRSH[@]}" domstate "$dom" 2>&1) == paused && $rc != 0 ]] && grep -q "DNS guard failed" "$t/out" \
  && ok "the seat is paused (libvirt: paused) and exec says why" \
  || not_ok "the seat is paused (paused $paused, libvirt $("${VIRSH[@]}" domstate "$dom" 2>&1), exec rc $rc)"
grep -Eq "seat '$A' paused: its DNS guard \(seat-dnsguard on $GA:53\) .* after 10 restarts (within 60 s|in a row, none of them up for 30 s): not restarted again; reset it" "$t/seatd.log" \
  && ok "seatd's log says the seat is paused and names the guard" || not_ok "seatd's log says the seat is paused and names the guard"
"$CTL" status "$A" >"$t/out" 2>&1
grep -q "PAUSED: its DNS guard failed" "$t/out" && grep -q "^dnsguard: FAILED: its DNS guard" "$t/out" \
  && ok "seatctl status shows the failed guard" || not_ok "seatctl status shows the failed guard"
kill -0 "$seatd_pid" && ok "seatd is still there" || bail "seatd died"

# The handover: a reset re-installs the rules, so the next guest starts with empty sets
# (and the resolver keeps no cache).
if "$CTL" -q reset "$A" >"$t/out" 2>&1; then
  empty=$("$CTL" --json status "$A" | json_field "all(not m['addresses'] for m in d['network']['names'])")
  [[ $empty == True ]] && ok "after a reset the name sets hold nothing of the last guest's lookups" \
    || not_ok "after a reset the name sets hold nothing of the last guest's lookups ($empty)"
  denied_case "$A" "after the reset the allowed server's address is dropped until the name is looked up" "${T[@]}" tcp "$WORLD_ALLOWED" 8080
  probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
    && ok "after the reset allowed.test resolves and connects" || not_ok "after the reset allowed.test connects"
  [[ $(gfield state) == running && $(gfield pid) == "$(guard_of)" && -z $(gfield error) ]] \
    && [[ $("$CTL" --json status "$A" | json_field 'd["network"]["paused"]') == False ]] \
    && ok "the reset started the failed guard again and resumed the seat" \
    || not_ok "the reset started the guard again ($(gfield state), pid $(gfield pid), running $(guard_of))"
else not_ok "reset of the seat with names"; fi

# ---------------------------------------------------------------- adoption
# seatd stopped: the guard goes with it. A new seatd adopts the seat with a new guard, its
# sets read back and watched; names resolve and connect, others do not.
adopted_checks() { # WHAT
  local what=$1 p
  grep -q "^$A " <<<"$("$CTL" list)" && ok "$what: the seat is adopted" || not_ok "$what: the seat is adopted"
  p=$(gfield pid)
  [[ $(gfield state) == running && $p == "$(guard_of)" && $(ps -o user= -p "$p" | tr -d ' ') == nobody ]] \
    && ok "$what: its guard runs again on $GA:53 as nobody (pid $p)" || not_ok "$what: its guard runs again ($(gfield state), pid $p)"
  [[ $("$CTL" --json status "$A" | json_field '"names_error" not in d["network"] and len(d["network"]["names"])') == 4 ]] \
    && ok "$what: its name sets are read back" || { "$CTL" status "$A" >"$t/out" 2>&1; not_ok "$what: its name sets are read back"; }
  probe "$A" "${T[@]}" --resolver "$HA" tcp allowed.test 8080 --send hi --expect hi \
    && ok "$what: allowed.test resolves and connects" || not_ok "$what: allowed.test resolves and connects"
  probe "$A" "${T[@]}" dns "$HA" blocked.test && grep -q "rcode=NXDOMAIN" "$t/out" \
    && ok "$what: blocked.test gets NXDOMAIN" || not_ok "$what: blocked.test gets NXDOMAIN"
  probe "$A" "${T[@]}" dns "$HA" cname-out.allowed.test && grep -q "rcode=NXDOMAIN" "$t/out" \
    && ok "$what: a CNAME out of the names gets NXDOMAIN" || not_ok "$what: a CNAME out of the names gets NXDOMAIN"
  denied_case "$A" "$what: blocked.test's address is dropped" "${T[@]}" tcp "$WORLD_BLOCKED" 8080
}
# gone_within PID N: until PID is gone, N tenths of a second at most
gone_within() { for _ in $(seq 1 "$2"); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done; return 1; }
# seatd_away STOP WHAT WHY AFTER: STOP (seatd_stop, seatd_kill) takes seatd away and the
# seat's guard must be gone with it ("WHAT (WHY)"; awaited up to 120 s: a sanitizer build
# on a loaded host exits slowly); then a new seatd adopts the seat (adopted_checks AFTER).
seatd_away() {
  local p
  p=$(gfield pid)
  "$1"
  gone_within "$p" 1200 && [[ -z $(guard_of) ]] && ok "$2 ($3)" || not_ok "$2 (still running: $(guard_of))"
  seatd_start
  adopted_checks "$4"
}
seatd_away seatd_stop "seatd stopping stops the seat's guard" "no restart, nothing left" "after a seatd restart"
e0=$("$CTL" --json status "$A" | json_field 'd["network"]["tamper_events"]')
nft flush set inet seatd "n40-$BRA"
wait_until 'e=$("$CTL" --json status "$A" | json_field '\''d["network"]["tamper_events"]'\''); ((${e:-0} > e0))'
(($("$CTL" --json status "$A" | json_field 'd["network"]["tamper_events"]') > e0)) \
  && ok "after a seatd restart its name sets are watched (nft flush set: a tamper event)" \
  || not_ok "after a seatd restart its name sets are watched"
# Killed: the guard sees its lifeline hang up and exits by itself.
seatd_away seatd_kill "seatd killed: its guard exits by itself" "the lifeline" "after seatd was killed"
p=$(gfield pid)
kill -9 "$p"
wait_guard "$p" && [[ $(gfield state) == running && $(gfield restarts) == 1 ]] \
  && ok "the adopting seatd supervises the guard (killed: restarted, pid $p -> $(gfield pid))" \
  || not_ok "the adopting seatd supervises the guard ($(gfield state), restarts $(gfield restarts))"

# A guard that hangs before it is ready. seatd runs the seat-dnsguard beside its own
# program (seatd/dnsguard-run.c guard_find()): here a copy of seatd beside one that, once
# each time $t/hang-once is there, stands still instead (it keeps the ready pipe open and
# never writes it), and otherwise is the real guard.
real_guard=
for g in "$(dirname "$SEATD")/seat-dnsguard" "$(dirname "$SEATD")/../network/seat-dnsguard" /usr/libexec/seatd/seat-dnsguard; do
  [[ -x $g ]] && { real_guard=$(realpath "$g"); break; }
done
[[ -n $real_guard ]] || bail "no seat-dnsguard beside $SEATD"
mkdir -p "$t/bin"
cp "$SEATD" "$t/bin/seatd"
[[ -x $(dirname "$SEATD")/seatd-collect ]] && ln -s "$(realpath "$(dirname "$SEATD")/seatd-collect")" "$t/bin/seatd-collect"
cat >"$t/bin/seat-dnsguard" <<EOF
#!/bin/bash
if mv "$t/hang-once" "$t/hanging" 2>/dev/null; then echo \$\$ >"$t/hanging"; exec -a seat-dnsguard-hanging sleep 300; fi
exec "$real_guard" "\$@"
EOF
chmod 0755 "$t/bin/seat-dnsguard"
# hung_pid: the pid of the guard that stands still, once it started (120 s at most: a
# restart's start is slow on a loaded host) (only a process that is still the stand-still
# guard: its pid may be another's by then)
harness_on_exit 'hp=$(cat "$t/hanging" 2>/dev/null); [[ -n $hp && $(tr "\0" " " </proc/$hp/cmdline 2>/dev/null) == seat-dnsguard-hanging* ]] && kill -9 "$hp"'
hung_pid() { wait_until '[[ -s $t/hanging ]]' && cat "$t/hanging"; }
seatd_stop
SEATD=$t/bin/seatd seatd_start
[[ $(gfield state) == running && $(gfield pid) == "$(guard_of)" ]] \
  && ok "seatd beside a stand-still guard adopts the seat with a guard that starts (pid $(gfield pid))" \
  || not_ok "seatd beside a stand-still guard adopts the seat ($(gfield state))"
p=$(gfield pid) r0=$(gfield restarts)
rm -f "$t/hanging"; : >"$t/hang-once"
kill -9 "$p"
hp=$(hung_pid)
[[ -n $hp && $(gfield state) == starting ]] \
  && ok "a restarted guard that hangs before it is ready: status says starting (pid $hp)" \
  || not_ok "a restarted guard that hangs before it is ready: status says starting (pid '$hp', $(gfield state))"
probe "$A" --timeout-ms 2000 dns "$HA" hang.wild.test
# Meaningful only if the guard still hung when the lookup ended (5 s from its start).
if [[ -n $hp ]] && kill -0 "$hp" 2>/dev/null; then
  grep -q "^probe=dns " "$t/out" && ! grep -q "a=$WORLD_ALLOWED" "$t/out" \
    && ok "while its guard hangs, an allowed name not looked up before does not resolve (closed: $(grep -o 'reason=[^ ]*\( rcode=[^ ]*\)\?' "$t/out"))" \
    || not_ok "while its guard hangs, an allowed name not looked up before does not resolve: $(head -c 300 "$t/out")"
else skip "while its guard hangs, an allowed name not looked up before does not resolve" "the lookup outlasted the hang"; fi
[[ -n $hp ]] && gone_within "$hp" 600 && ok "the guard that hangs is killed (pid $hp gone within 60 s)" \
  || not_ok "the guard that hangs is killed (pid '$hp' still there)"
wait_until '[[ $(gfield state) == running && $(gfield pid) != "$p" && $(gfield pid) != "$hp" ]]'
[[ $(gfield state) == running && $(gfield pid) == "$(guard_of)" && $(gfield restarts) == $((r0 + 2)) ]] \
  && ok "then it is restarted, and counted: the kill and the hang (restarts $r0 -> $(gfield restarts), pid $(gfield pid))" \
  || not_ok "then it is restarted, and counted ($(gfield state), restarts $r0 -> $(gfield restarts), pid $(gfield pid), running $(guard_of))"
rm -f "$t/hang-once" # (when no guard took it: no later guard must)
grep -q "seat '$A': its DNS guard (seat-dnsguard on $GA:53) did not start: not ready within 5000 ms: killed: restarting it in" "$t/seatd.log" \
  && ok "seatd's log says the guard was not ready within 5000 ms and was killed" \
  || not_ok "seatd's log says the guard was not ready ($(grep "seat '$A': its DNS guard" "$t/seatd.log" | tail -2))"
probe "$A" "${T[@]}" --resolver "$HA" tcp hang.wild.test 8080 --send hi --expect hi \
  && ok "after the hang, the name that did not resolve meanwhile resolves and connects" \
  || not_ok "after the hang, the name that did not resolve meanwhile resolves and connects"
# At provision: the seat is not made, and nothing of it is left.
rm -f "$t/hanging"; : >"$t/hang-once"
nft_names() { nft list table inet seatd 2>/dev/null | awk '$1 == "chain" || $1 == "set" {print $1, $2}' | sort; }
seats0=$(seatd_seat_ids | sort | tr '\n' ' ') doms0=$(our_domains | sort | tr '\n' ' ') nft0=$(nft_names)
br0=$(ip -o link show type bridge | awk -F': ' '{print $2}' | sort)
"$CTL" -q provision --image test-image --egress names >"$t/prov2" 2>"$t/out" \
  && { not_ok "a provision whose guard hangs fails"; "$CTL" -q release "$(awk 'NR==2 {print $1}' "$t/prov2")" >/dev/null 2>&1; } \
  || { grep -q "its DNS guard (seat-dnsguard on .*:53) was not ready within 5000 ms and was killed: the seat's names could not be resolved" "$t/out" \
    && ! grep -qE "(seat '[^']+'): .*\1" "$t/out" \
    && ok "a provision whose guard hangs fails, saying so (naming the seat once): $(head -c 240 "$t/out")" || not_ok "a provision whose guard hangs fails, saying so (naming the seat once): $(head -c 300 "$t/out")"; }
rm -f "$t/hang-once"
hp=$(cat "$t/hanging" 2>/dev/null)
[[ -n $hp ]] && gone_within "$hp" 50 && ok "the provision's hanging guard is killed (pid $hp)" || not_ok "the provision's hanging guard is killed (pid '$hp')"
[[ $(seatd_seat_ids | sort | tr '\n' ' ') == "$seats0" && $(our_domains | sort | tr '\n' ' ') == "$doms0" ]] \
  && ok "no half-made seat: the same seats and domains as before ($seats0)" \
  || not_ok "no half-made seat (seats '$seats0' -> '$(seatd_seat_ids | tr '\n' ' ')', domains '$doms0' -> '$(our_domains | tr '\n' ' ')')"
[[ $(nft_names) == "$nft0" && $(ip -o link show type bridge | awk -F': ' '{print $2}' | sort) == "$br0" ]] \
  && ok "no half-made seat: the same chains, sets and bridges as before" \
  || not_ok "no half-made seat: chains, sets or bridges changed ($(diff <(echo "$nft0") <(nft_names) | tail -3 | tr '\n' ' '))"

"$CTL" -q release "$A" >"$t/out" 2>&1
left=$(nft list table inet seatd 2>/dev/null | grep -c "seat-$A" || true)
[[ $left == 0 ]] && ok "release removes the seat's chains and sets" || not_ok "release removes the seat's chains and sets ($left lines left)"
pgrep --ns $$ --nslist pid -f "seat-dnsguard --listen $GA " >/dev/null && not_ok "release stops the seat's DNS guard" || ok "release stops the seat's DNS guard"

tap_end
