#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# "allow name" (docs/egress.md "Names") proven without VMs: a namespace stands in for a
# seat's guest, dnsmasq runs on its bridge with exactly the options seatd gives libvirt's
# dnsmasq for the profile (nftest dnsmasq = netdef_dnsmasq_options()), and the filter is
# nftest's (network/nft.c). The outside world is world.sh's, with a few more names in its
# zone:
#
#   netns seatd-nn-g1 (guest 10.218.1.6, 52:54:00:d5:01:01) --veth-- bridge seat-nn1 (10.218.1.5,
#     dnsmasq on :53)
#   host: policy routing table 214 from the bridge -> veth uplink sdnn-up0 (10.255.214.1/30)
#     -> netns seatd-nn-out (world.sh); dnsmasq's own queries to 198.51.100.53 by a host
#     route through the same veth
#
# Cases: an allowed name resolves, lands in its set and connects, while its address is
# dropped before it was resolved; a name not allowed gets NXDOMAIN and its address is
# dropped when dialled; a wildcard covers names below at any depth but not itself; names
# answering the metadata address, a private address behind the uplink, or the host's
# bridge address get NXDOMAIN and add nothing; a private address put into the set by hand
# still opens nothing; the guest cannot ask another resolver; `nft flush set` is detected
# by the watch and repaired by installing again; an address leaves the set when the set's
# timeout runs out.
#
# The seat's DNS guard (seat-dnsguard, started with nftest dnsguard's arguments =
# netdef_guard_argv(), as seatd starts it) sits between dnsmasq and the upstream: a CNAME
# into a name not allowed gets NXDOMAIN and adds nothing (the world's upstream sends the
# whole chain with the target's address, and a control shows it does); malformed and
# oversized answers get SERVFAIL and add nothing; lookups after them still work; the same
# over TCP (the guest asks dnsmasq over TCP, dnsmasq asks the guard, the guard the world).
#
# usage: names.sh NFTEST GUEST_PROBE DNSGUARD
set -u

NFTEST=${1:?usage: names.sh NFTEST GUEST_PROBE DNSGUARD}
GP=${2:?usage: names.sh NFTEST GUEST_PROBE DNSGUARD}
DNSGUARD=${3:?usage: names.sh NFTEST GUEST_PROBE DNSGUARD}
HERE=$(cd "$(dirname "$0")" && pwd)

BR=seat-nn1 UP=sdnn-up0 V=sdnn-g1 NS=seatd-nn-g1 RT=214
HOST=10.218.1.5 GUEST=10.218.1.6 MAC=52:54:00:d5:01:01
SEAT=(--seat nn1 --bridge $BR --uplink $UP --guest $GUEST --host $HOST --mac $MAC --masquerade)
SET4=n40-$BR

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
diag() { echo "# $*"; }

# shellcheck source=world.sh
. "$HERE/world.sh"
world_skip_unless_usable dnsmasq
if ! dnsmasq --version | grep -qw nftset; then
        echo "1..0 # SKIP this dnsmasq is built without nftset"
        exit 0
fi
world_lock || { echo "Bail out! cannot take the egress test lock"; exit 1; }
WORLD_NS=seatd-nn-out WORLD_NET=10.255.214
PRIVATE=$WORLD_NET.2 # the world's end of the uplink: private, and reachable behind it
V6_PUBLIC=2001:db8:10::10 # only ever an answer's data: no packet is sent to it
WORLD_ZONE+=(a.wild.test=$WORLD_ALLOWED b.c.wild.test=$WORLD_ALLOWED wild.test=$WORLD_ALLOWED
        private.test=$PRIVATE hostaddr.test=$HOST
        cname-in.allowed.test=cname:a.wild.test cname-out.allowed.test=cname:blocked.test
        malformed.allowed.test=malformed oversized.allowed.test=oversized
        v6.test=$V6_PUBLIC ula.test=fd00:ec2::254 mapped.test=::ffff:169.254.169.254
        nat64.test=64:ff9b::a9fe:a9fe linklocal.test=fe80::1)
TMP=$(mktemp -d /tmp/seatd-names.XXXXXX)
WORLD_DIR=$TMP/world
DNSMASQ_PID= GUARD_PID=

cleanup() {
        local p
        for p in $DNSMASQ_PID $GUARD_PID; do
                kill "$p" 2>/dev/null
                wait "$p" 2>/dev/null
        done
        "$NFTEST" remove "${SEAT[@]}" 2>/dev/null
        ip route del $WORLD_DNS/32 2>/dev/null
        world_unroute $RT
        world_guest_down $NS $BR $V
        world_down
        world_drop_empty_table
        rm -rf "$TMP"
}
world_on_exit cleanup

cat >"$TMP/names.profile" <<EOF
dns $WORLD_DNS
ipv6 allow
allow name allowed.test tcp port 8080
allow name *.wild.test tcp port 8080
allow name metadata.test tcp port 80
allow name private.test tcp port 8080
allow name hostaddr.test tcp port 2222
allow name v6.test tcp port 8080
allow name ula.test tcp port 8080
allow name mapped.test tcp port 8080
allow name nat64.test tcp port 8080
allow name linklocal.test tcp port 8080
EOF
SEAT+=(--profile "$TMP/names.profile")

start_dnsmasq() {
        # What libvirt writes for a network with <dns enable='yes'> on this bridge, then
        # seatd's options for the profile.
        {
                echo "strict-order"
                echo "interface=$BR"
                echo "bind-dynamic"
                echo "except-interface=lo"
                echo "pid-file="
                echo "log-queries"
                echo "log-facility=$TMP/dnsmasq.log"
                "$NFTEST" dnsmasq "${SEAT[@]}"
        } >"$TMP/dnsmasq.conf" || return
        dnsmasq --keep-in-foreground --conf-file="$TMP/dnsmasq.conf" &
        DNSMASQ_PID=$!
        world_wait_listening host 1 53
}

# The guard as seatd starts it (as root, it binds its port and becomes nobody).
start_guard() {
        local args
        mapfile -t args < <("$NFTEST" dnsguard "${SEAT[@]}") || return
        ((${#args[@]} > 0)) || return
        "$DNSGUARD" "${args[@]}" --user nobody 2>"$TMP/dnsguard.log" &
        GUARD_PID=$!
        # (up to 120 s: a sanitizer build on a loaded host starts slowly)
        for _ in $(seq 1 2400); do
                grep -q listening "$TMP/dnsguard.log" && return 0
                kill -0 "$GUARD_PID" 2>/dev/null || break
                sleep 0.05
        done
        cat "$TMP/dnsguard.log" >&2
        return 1
}

setup() {
        world_up $UP || return
        world_guest_up $NS $BR $V $HOST $GUEST/30 $MAC || return
        world_route $RT $BR || return
        ip route replace $WORLD_DNS/32 via $WORLD_NET.2 dev $UP || return
        world_serve $WORLD_NS serve-tcp $PRIVATE 8080
        world_serve host serve-tcp $HOST 2222
        world_wait_listening $WORLD_NS 1 8080 || return
        world_wait_listening host 1 2222 || return
        "$NFTEST" install "${SEAT[@]}" || return
        start_guard || return
        start_dnsmasq
}

if ! setup >"$TMP/setup.log" 2>&1; then
        echo "Bail out! cannot build the test world: $(tail -n 3 "$TMP/setup.log" | tr '\n' ' ')"
        exit 1
fi
forwarding() { local m; m=$(world_forwarding); [[ -z $m ]] || diag "$m"; }
forwarding

probe() { ip netns exec $NS "$GP" --timeout-ms 1500 "$@" >"$TMP/probe.out" 2>&1; }
out() { cat "$TMP/probe.out"; }
in_set() { nft -j list set inet seatd "$1" 2>/dev/null | grep -q "\"$2\""; }
in_any_set() { nft list table inet seatd | awk "/set n[46][0-9]*-$BR /,/^\t}/" | grep -qE "$1"; }
denied() { "$NFTEST" denied "${SEAT[@]}"; }

# 1. Allowed name.
if probe tcp $WORLD_ALLOWED 8080 --send hi --expect hi; then
        not_ok "the allowed name's address is dropped before the name was resolved: reached: $(out)"
else ok "the allowed name's address is dropped before the name was resolved"; fi
if probe dns $HOST allowed.test && grep -q "rcode=NOERROR" "$TMP/probe.out" && grep -q "a=$WORLD_ALLOWED" "$TMP/probe.out"; then
        ok "allowed.test resolves through the seat's resolver"
else not_ok "allowed.test resolves through the seat's resolver: $(out)"; fi
if in_set $SET4 $WORLD_ALLOWED; then ok "its address is in the name's set"
else not_ok "its address is in the name's set: $(nft list set inet seatd $SET4 2>&1)"; fi
if probe tcp allowed.test 8080 --resolver $HOST --send hi --expect hi; then ok "allowed.test connects"
else not_ok "allowed.test connects: $(out)"; fi
if "$NFTEST" names "${SEAT[@]}" >"$TMP/names.json" &&
        python3 - "$TMP/names.json" "$WORLD_ALLOWED" <<'EOF'; then
import json, sys
names = {n["name"]: n for n in json.load(open(sys.argv[1]))}
a = names["allowed.test"]
assert [x["address"] for x in a["addresses"]] == [sys.argv[2]], a
assert 0 < a["addresses"][0]["expires_s"] <= 300, a
assert a["packets"] > 0 and a["ports"] == ["tcp 8080"], a
assert names["metadata.test"]["addresses"] == [], names
EOF
        ok "status lists the name's address with its expiry and the name's packets"
else not_ok "status lists the name's address: $(cat "$TMP/names.json")"; fi
if probe tcp allowed.test 8081 --resolver $HOST --send hi --expect hi; then
        not_ok "allowed.test on a port not named is dropped: reached: $(out)"
else ok "allowed.test on a port not named is dropped"; fi

# 2. A name not allowed.
before=$(denied)
if probe dns $HOST blocked.test && grep -q "rcode=NXDOMAIN" "$TMP/probe.out"; then ok "blocked.test gets NXDOMAIN"
else not_ok "blocked.test gets NXDOMAIN: $(out)"; fi
if probe tcp $WORLD_BLOCKED 8080 --send hi --expect hi; then not_ok "blocked.test's address dialled directly is dropped: reached"
else ok "blocked.test's address dialled directly is dropped"; fi
after=$(denied)
if ((after > before)); then ok "the seat's denied counter grew ($before -> $after)"
else not_ok "the seat's denied counter grew ($before -> $after)"; fi
if probe dns $WORLD_DNS allowed.test; then not_ok "the guest cannot ask another resolver (the upstream): answered: $(out)"
else ok "the guest cannot ask another resolver (the upstream)"; fi

# 3. Wildcard: every level below, not the name itself.
for name in a.wild.test b.c.wild.test; do
        if probe tcp $name 8080 --resolver $HOST --send hi --expect hi; then ok "wildcard *.wild.test: $name connects"
        else not_ok "wildcard *.wild.test: $name connects: $(out)"; fi
done
if probe dns $HOST wild.test && grep -q "rcode=NXDOMAIN" "$TMP/probe.out"; then
        ok "wildcard *.wild.test does not cover wild.test itself (NXDOMAIN)"
else not_ok "wildcard *.wild.test does not cover wild.test itself: $(out)"; fi

# 4. Rebinding: allowed names answering the metadata service, a private address behind the
# uplink, the host's bridge address.
set_of() { # the set of the name's first rule in the profile
        local i
        i=$(grep '^allow' "$TMP/names.profile" | grep -n " name $1 " | cut -d: -f1)
        echo "n4$((i - 1))-$BR"
}
for case in metadata.test=$WORLD_METADATA private.test=$PRIVATE hostaddr.test=$HOST; do
        name=${case%=*} addr=${case#*=}
        if probe dns $HOST $name && grep -q "rcode=NXDOMAIN" "$TMP/probe.out"; then ok "$name ($addr) gets NXDOMAIN"
        else not_ok "$name ($addr) gets NXDOMAIN: $(out)"; fi
        if in_set "$(set_of $name)" "$addr"; then not_ok "$name: $addr was added to its set"
        else ok "$name: $addr is not in its set"; fi
done
if probe tcp $WORLD_METADATA 80 --send hi; then not_ok "the metadata address dialled directly is dropped: reached"
else ok "the metadata address dialled directly is dropped"; fi
# Someone else puts the private address into the name's set: the rule still refuses it.
nft add element inet seatd "$(set_of private.test)" "{ $PRIVATE }"
if probe tcp $PRIVATE 8080 --send hi --expect hi; then not_ok "a private address put into a name's set by hand opens nothing: reached"
else ok "a private address put into a name's set by hand opens nothing"; fi

# 4b. The DNS guard. The world's upstream answers cname-out.allowed.test with the whole
# chain, "CNAME blocked.test" and blocked.test's address (control, asked from the host).
dnsq() { # SERVER NAME [tcp]: one A query; prints "rcode=N an=N" and the A records
        python3 - "$@" <<'PYEOF'
import random, socket, struct, sys
server, name, tcp = sys.argv[1], sys.argv[2], len(sys.argv) > 3
msg = struct.pack("!HHHHHH", random.randrange(65536), 0x0100, 1, 0, 0, 0)
msg += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0\0\1\0\1"
if tcp:
    s = socket.create_connection((server, 53), timeout=4)
    s.sendall(struct.pack("!H", len(msg)) + msg)
    r = b""
    while len(r) < 2 or len(r) < 2 + struct.unpack("!H", r[:2])[0]:
        c = s.recv(65535)
        if not c:
            break
        r += c
    r = r[2:]
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(4)
    s.sendto(msg, (server, 53))
    r = s.recv(65535)
print("rcode=%d an=%d" % (r[3] & 15, struct.unpack("!H", r[6:8])[0]), end="")
for i in range(len(r) - 13):  # A records: type 1, class 1, ttl, rdlength 4 (good enough here)
    if r[i:i + 4] == b"\0\1\0\1" and r[i + 8:i + 10] == b"\0\4":
        print(" a=%s" % socket.inet_ntoa(r[i + 10:i + 14]), end="")
print()
PYEOF
}
if dnsq $WORLD_DNS cname-out.allowed.test >"$TMP/probe.out" 2>&1 && grep -q "rcode=0 an=2 a=$WORLD_BLOCKED" "$TMP/probe.out"; then
        ok "control: the upstream answers cname-out.allowed.test with CNAME blocked.test and its address"
else not_ok "control: the upstream answers cname-out.allowed.test with the chain: $(out)"; fi
if probe dns $HOST cname-in.allowed.test && grep -q "rcode=NOERROR" "$TMP/probe.out" && grep -q "a=$WORLD_ALLOWED" "$TMP/probe.out"; then
        ok "a CNAME into an allowed name (cname-in.allowed.test -> a.wild.test) resolves"
else not_ok "a CNAME into an allowed name resolves: $(out)"; fi
if probe tcp cname-in.allowed.test 8080 --resolver $HOST --send hi --expect hi; then ok "cname-in.allowed.test connects"
else not_ok "cname-in.allowed.test connects: $(out)"; fi
before=$(denied)
if probe dns $HOST cname-out.allowed.test && grep -q "rcode=NXDOMAIN" "$TMP/probe.out"; then
        ok "a CNAME into a name not allowed (cname-out.allowed.test -> blocked.test) gets NXDOMAIN"
else not_ok "a CNAME into a name not allowed gets NXDOMAIN: $(out)"; fi
if in_any_set "$WORLD_BLOCKED"; then
        not_ok "cname-out: blocked.test's address $WORLD_BLOCKED was added to a set: $(nft list set inet seatd $SET4)"
else ok "cname-out: blocked.test's address is in none of the seat's sets"; fi
if probe tcp cname-out.allowed.test 8080 --resolver $HOST --send hi --expect hi ||
        probe tcp $WORLD_BLOCKED 8080 --send hi --expect hi; then
        not_ok "cname-out: the connection to blocked.test's address is dropped: reached"
else ok "cname-out: the connection to blocked.test's address is dropped"; fi
after=$(denied)
if ((after > before)); then ok "cname-out: the seat's denied counter grew ($before -> $after)"
else not_ok "cname-out: the seat's denied counter grew ($before -> $after)"; fi
grep -q "NXDOMAIN for 'cname-out.allowed.test' (type 1): a CNAME to a name not allowed" "$TMP/dnsguard.log" &&
        ok "the guard logged why" || not_ok "the guard logged why: $(tail -3 "$TMP/dnsguard.log")"
for case in malformed=198.51.100.12 oversized=198.51.100.11; do
        name=${case%=*}.allowed.test addr=${case#*=}
        # The guard answers SERVFAIL; dnsmasq 2.90 with libvirt's strict-order passes an
        # only server's SERVFAIL on over TCP but not over UDP (the query then times out).
        probe dns $HOST $name
        if ! grep -q "a=" "$TMP/probe.out" && grep -qE "rcode=SERVFAIL|reason=timeout" "$TMP/probe.out"; then
                ok "a ${case%=*} answer ($name): the guest's lookup fails ($(grep -oE "rcode=SERVFAIL|reason=timeout" "$TMP/probe.out"))"
        else not_ok "a ${case%=*} answer ($name): the guest's lookup fails: $(out)"; fi
        grep -q "SERVFAIL for '$name'" "$TMP/dnsguard.log" && ok "$name: the guard answered SERVFAIL" ||
                not_ok "$name: the guard answered SERVFAIL: $(tail -2 "$TMP/dnsguard.log")"
        if in_any_set "$addr"; then
                not_ok "$name: its address $addr was added to a set"
        else ok "$name: its address $addr is in none of the seat's sets"; fi
done
nft flush set inet seatd $SET4 # (a tamper nothing watches here): the next lookup must fill it again
if probe dns $HOST allowed.test && grep -q "a=$WORLD_ALLOWED" "$TMP/probe.out" && in_set $SET4 $WORLD_ALLOWED &&
        probe tcp allowed.test 8080 --resolver $HOST --send hi --expect hi; then
        ok "after those answers allowed.test still resolves, fills its set and connects"
else not_ok "after those answers allowed.test still resolves and connects: $(out)"; fi
# Over TCP: the guest asks dnsmasq over TCP, which asks the guard over TCP, which asks the world.
gdnsq() { ip netns exec $NS bash -c "$(declare -f dnsq); dnsq $*" >"$TMP/probe.out" 2>&1; }
if gdnsq $HOST allowed.test tcp && grep -q "rcode=0 an=1 a=$WORLD_ALLOWED" "$TMP/probe.out"; then
        ok "over TCP: allowed.test resolves"
else not_ok "over TCP: allowed.test resolves: $(out)"; fi
if gdnsq $HOST cname-out.allowed.test tcp && grep -q "rcode=3 an=0" "$TMP/probe.out"; then
        ok "over TCP: the CNAME into a name not allowed gets NXDOMAIN"
else not_ok "over TCP: the CNAME into a name not allowed gets NXDOMAIN: $(out)"; fi
if gdnsq $HOST malformed.allowed.test tcp && grep -q "rcode=2 an=0" "$TMP/probe.out"; then
        ok "over TCP: the malformed answer gets SERVFAIL"
else not_ok "over TCP: the malformed answer gets SERVFAIL: $(out)"; fi
if in_any_set "$WORLD_BLOCKED|198.51.100.1[12]"; then
        not_ok "over TCP: nothing of those answers was added to a set"
else ok "over TCP: nothing of those answers was added to a set"; fi
if ps -o user= -p "$GUARD_PID" | grep -qx nobody; then ok "the guard runs as nobody"
else not_ok "the guard runs as nobody: $(ps -o user=,cmd= -p "$GUARD_PID")"; fi

# 4c. IPv6 names ("ipv6 allow"): an AAAA answer's address goes into the name's IPv6 set
# (n6<I>-BR), and status lists it; AAAA answers with the IPv6 metadata address (a ULA),
# an IPv4-mapped or NAT64 form of 169.254.169.254, or a link-local address get NXDOMAIN
# and add nothing. Only DNS is sent (over IPv4, to the seat's resolver): the world has no
# IPv6, so no connection to the address is tried.
set6_of() { local s; s=$(set_of "$1"); echo "n6${s#n4}"; }
aaaa() { probe dns-aaaa $HOST "$1"; }
if aaaa v6.test && grep -q " rcode=NOERROR " "$TMP/probe.out" && grep -q " aaaa=$V6_PUBLIC " "$TMP/probe.out"; then
        ok "v6.test: the AAAA answer ($V6_PUBLIC) reaches the guest"
else not_ok "v6.test: the AAAA answer reaches the guest: $(out)"; fi
if in_set "$(set6_of v6.test)" "$V6_PUBLIC"; then ok "v6.test: $V6_PUBLIC is in the name's IPv6 set $(set6_of v6.test)"
else not_ok "v6.test: $V6_PUBLIC is in its IPv6 set: $(nft list set inet seatd "$(set6_of v6.test)" 2>&1)"; fi
# status (nftest names = what `seatctl status` shows): "ADDRESS:1" when its expiry is in (0, 300] s
addrs6=$("$NFTEST" names "${SEAT[@]}" 2>&1 | python3 -c 'import json, sys
n = {x["name"]: x for x in json.load(sys.stdin)}["v6.test"]
print(" ".join("%s:%d" % (a["address"], 0 < a["expires_s"] <= 300) for a in n["addresses"]))' 2>&1)
if [[ $addrs6 == "$V6_PUBLIC:1" ]]; then ok "status lists v6.test's IPv6 address with its expiry"
else not_ok "status lists v6.test's IPv6 address with its expiry: $addrs6"; fi
for case in ula.test=fd00:ec2::254 mapped.test=::ffff:169.254.169.254 nat64.test=64:ff9b::a9fe:a9fe linklocal.test=fe80::1; do
        name=${case%%=*} addr=${case#*=}
        if aaaa $name && grep -q " rcode=NXDOMAIN " "$TMP/probe.out"; then ok "$name (AAAA $addr) gets NXDOMAIN"
        else not_ok "$name (AAAA $addr) gets NXDOMAIN: $(out)"; fi
        # the set must exist and hold nothing (a missing set is a failure, not "empty")
        if elems=$(nft list set inet seatd "$(set6_of $name)" 2>&1) && [[ $elems != *elements* ]]; then
                ok "$name: its IPv6 set $(set6_of $name) exists and stays empty"
        else not_ok "$name: its IPv6 set exists and stays empty: $elems"; fi
done

# 5. Tamper: the set flushed behind seatd's back is detected, and installing repairs it.
"$NFTEST" watch "${SEAT[@]}" --timeout-ms 5000 --interval-ms 60000 >"$TMP/watch.out" 2>&1 &
watch=$!
for i in $(seq 1 2400); do grep -q ready "$TMP/watch.out" && break; kill -0 $watch 2>/dev/null || break; sleep 0.05; done
nft flush set inet seatd $SET4
wait $watch
if grep -q "detected seat=nn1 state=changed via=netlink" "$TMP/watch.out"; then ok "nft flush set is detected ($(tail -1 "$TMP/watch.out"))"
else not_ok "nft flush set is detected: $(cat "$TMP/watch.out")"; fi
if "$NFTEST" install "${SEAT[@]}" && "$NFTEST" verify "${SEAT[@]}" >/dev/null; then ok "re-installed: the rules and sets read back as meant"
else not_ok "re-installed: the rules and sets read back as meant"; fi
if probe tcp allowed.test 8080 --resolver $HOST --send hi --expect hi; then ok "after the repair allowed.test resolves and connects again"
else not_ok "after the repair allowed.test connects again: $(out)"; fi
nft delete set inet seatd "n41-$BR" 2>/dev/null # a set deleted: a rule uses it, nft refuses
"$NFTEST" verify "${SEAT[@]}" >"$TMP/verify.out" 2>&1
diag "verify after an attempt to delete a used set: $(cat "$TMP/verify.out")"

# 6. Expiry: an address leaves its name's set when the set's timeout runs out (here 3 s,
# installed again with a short timeout; seatd uses 300 s), and is then dropped again.
if "$NFTEST" install "${SEAT[@]}" --name-timeout 3 && probe tcp allowed.test 8080 --resolver $HOST --send hi --expect hi &&
        in_set $SET4 $WORLD_ALLOWED; then
        ok "with a 3 s set timeout allowed.test resolves, connects and is in its set"
else not_ok "with a 3 s set timeout allowed.test resolves and connects: $(out)"; fi
for i in $(seq 1 100); do in_set $SET4 $WORLD_ALLOWED || break; sleep 0.1; done
if in_set $SET4 $WORLD_ALLOWED; then not_ok "the address left its set when the timeout ran out: $(nft list set inet seatd $SET4)"
else ok "the address left its set when the timeout ran out"; fi
if probe tcp $WORLD_ALLOWED 8080 --send hi --expect hi; then not_ok "after the expiry its address is dropped until the name is looked up again: reached"
else ok "after the expiry its address is dropped until the name is looked up again"; fi

# 7. Fail closed: a name's set that cannot be made (another chain's rule holds a set of
# that name, so it cannot be replaced) keeps the filter from installing, and nothing of
# the seat's is left.
"$NFTEST" remove "${SEAT[@]}"
nft add set inet seatd $SET4 "{ type ipv4_addr; }" && nft add chain inet seatd nn-holder &&
        nft add rule inet seatd nn-holder ip daddr @$SET4 drop
if "$NFTEST" install "${SEAT[@]}" >"$TMP/install.out" 2>&1; then not_ok "a set that cannot be made: the install fails"
else ok "a set that cannot be made: the install fails ($(head -c 200 "$TMP/install.out"))"; fi
left=$(nft list table inet seatd | grep -cE "chain (fwd|in|out|to|host|ing)-$BR |set n[46][1-9][0-9]*-$BR ")
if ((left == 0)); then ok "a set that cannot be made: none of the seat's chains or other sets is left"
else not_ok "a set that cannot be made: $left of the seat's chains or sets are left"; fi
nft delete chain inet seatd nn-holder && nft delete set inet seatd $SET4
if "$NFTEST" install "${SEAT[@]}" && "$NFTEST" verify "${SEAT[@]}" >/dev/null; then ok "once the holder is gone the install succeeds"
else not_ok "once the holder is gone the install succeeds"; fi

diag "dnsmasq log: $(grep -c . "$TMP/dnsmasq.log" 2>/dev/null) lines"
sed 's/^/# /' "$TMP/dnsguard.log"
grep -E "metadata.test|private.test|hostaddr.test|error|fail" "$TMP/dnsmasq.log" 2>/dev/null | cut -d' ' -f5- | sed 's/^/# /'
echo "1..$n"
((failed == 0))
