#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The egress filter (network/nft.c) proven without VMs (docs/egress.md). Network
# namespaces stand in for two seats' guests and for the outside world:
#
#   netns seatd-nt-g1 (guest 10.213.0.6, 52:54:00:d5:00:01) --veth-- bridge seat-nt1 (10.213.0.5)
#   netns seatd-nt-g2 (guest 10.213.0.10)                   --veth-- bridge seat-nt2 (10.213.0.9)
#   host: policy routing table 213 for traffic from the seat bridges -> veth uplink sdnt-up0
#   netns seatd-nt-out: allowed server 198.51.100.10:8080, other port :8081, UDP :8080,
#     blocked server 203.0.113.10:8080, metadata 169.254.169.254:80,
#     DNS 198.51.100.53 (allowed) and 203.0.113.53 (not)
#
# Nothing is routed towards eth0 (the guard is loaded first; table 213 ends in a blackhole)
# and IPv4 forwarding is switched on only for the test's own interfaces. Every case runs
# once without the filter (the world is wired: it must work) and once with it (it must
# fail, and the seat's denied counters must grow). Then tamper detection: the table
# flushed and one rule changed behind seatd's back, with the detection window measured.
#
# usage: egress.sh NFTEST NETPROBE
set -u

NFTEST=${1:?usage: egress.sh NFTEST NETPROBE}
PROBE=${2:?usage: egress.sh NFTEST NETPROBE}
HERE=$(cd "$(dirname "$0")" && pwd)

BR1=seat-nt1 BR2=seat-nt2 UP=sdnt-up0 UPO=sdnt-up1 V1=sdnt-g1 V2=sdnt-g2
NS1=seatd-nt-g1 NS2=seatd-nt-g2 NSO=seatd-nt-out
RT=213
MAC1=52:54:00:d5:00:01 MAC2=52:54:00:d5:00:02
SEAT1=(--seat nt1 --bridge $BR1 --uplink $UP --guest 10.213.0.6 --mac $MAC1 --masquerade)
SEAT2=(--seat nt2 --bridge $BR2 --uplink $UP --guest 10.213.0.10 --mac $MAC2 --masquerade)

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() { # check DESCRIPTION COMMAND...
        local d=$1; shift
        if "$@"; then ok "$d"; else not_ok "$d"; fi
}
diag() { echo "# $*"; }

if [[ $(id -u) != 0 ]]; then
        echo "1..0 # SKIP needs root (network namespaces, nftables)"
        exit 0
fi
for tool in ip nft python3 bridge setpriv; do
        if ! command -v $tool >/dev/null; then
                echo "1..0 # SKIP $tool is missing"
                exit 0
        fi
done

# The guard from docs: loaded FIRST, left loaded.
# shellcheck source=../../scripts/lib/host.sh
. "$HERE/../../scripts/lib/host.sh"
host_load_guard || { echo "1..0 # SKIP cannot load the guard ruleset"; exit 0; }
nft list table inet seat_guard >/dev/null 2>&1 || { echo "Bail out! guard ruleset not loaded"; exit 1; }

TMP=$(mktemp -d /tmp/seatd-egress.XXXXXX)
PIDS=()

cleanup() {
        local p
        [[ -f $TMP/pids ]] && mapfile -t -O "${#PIDS[@]}" PIDS <"$TMP/pids"
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
        for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
        PIDS=()
        "$NFTEST" remove "${SEAT1[@]}" 2>/dev/null
        "$NFTEST" remove "${SEAT2[@]}" 2>/dev/null
        while ip rule del lookup $RT 2>/dev/null; do :; done
        ip route flush table $RT 2>/dev/null
        ip route del 10.213.9.9/32 dev $BR1 2>/dev/null
        for ns in $NS1 $NS2 $NSO; do ip netns del $ns 2>/dev/null; done
        for l in $BR1 $BR2 $UP $V1 $V2; do ip link del $l 2>/dev/null; done
        rm -f "$TMP/pids"
}
cleanup_all() {
        cleanup
        # An empty table left by this test alone is removed; one with other chains stays.
        if nft -j list table inet seatd 2>/dev/null | python3 -c \
                'import json,sys; sys.exit(any("chain" in x for x in json.load(sys.stdin)["nftables"]))'; then
                nft delete table inet seatd 2>/dev/null
        fi
        rm -rf "$TMP"
}
trap cleanup_all EXIT
trap 'exit 130' INT TERM
cleanup # leftovers of a run that was killed

in_ns() { local ns=$1; shift; ip netns exec "$ns" "$@"; }
# Servers' pids go to a file: setup runs in a subshell (for set -e).
serve() {
        local ns=$1; shift
        if [[ $ns == host ]]; then "$PROBE" "$@" & else in_ns "$ns" "$PROBE" "$@" & fi
        echo $! >>"$TMP/pids"
}
probe() { in_ns $NS1 "$PROBE" "$@" >/dev/null 2>&1; }
denied() { "$NFTEST" denied "${SEAT1[@]}" 2>/dev/null || echo -1; }

setup() {
        set -e
        ip netns add $NSO
        ip netns add $NS1
        ip netns add $NS2
        in_ns $NSO ip link set lo up
        in_ns $NS1 ip link set lo up
        in_ns $NS2 ip link set lo up

        # The uplink: a veth into the outside namespace.
        ip link add $UP type veth peer name $UPO netns $NSO
        ip addr add 198.51.100.1/24 dev $UP
        ip link set $UP up
        in_ns $NSO ip link set $UPO up
        for a in 198.51.100.254/24 198.51.100.10/24 198.51.100.53/24 203.0.113.10/24 203.0.113.53/24 169.254.169.254/16; do
                in_ns $NSO ip addr add $a dev $UPO
        done
        # Only for the unfiltered control (the filter masquerades).
        in_ns $NSO ip route add 10.213.0.0/16 via 198.51.100.1

        # Two seat bridges, one isolated port each, like libvirt's <port isolated='yes'/>.
        local br v ns hostip guestip mac
        for i in 1 2; do
                br=seat-nt$i v=sdnt-g$i ns=seatd-nt-g$i
                hostip=10.213.0.$((i * 4 + 1)) guestip=10.213.0.$((i * 4 + 2))
                mac=52:54:00:d5:00:0$i
                ip link add $br type bridge
                ip addr add $hostip/30 dev $br
                ip link set $br up
                ip link add $v type veth peer name eth0 netns $ns
                ip link set $v master $br
                bridge link set dev $v isolated on
                ip link set $v up
                in_ns $ns ip link set eth0 address $mac
                in_ns $ns ip addr add $guestip/30 dev eth0
                in_ns $ns ip link set eth0 up
                in_ns $ns ip route add default via $hostip
                sysctl -qw net.ipv4.conf.$br.forwarding=1
        done
        ip addr add 2001:db8:5ea7::1/64 dev $BR1 nodad
        in_ns $NS1 ip addr add 2001:db8:5ea7::2/64 dev eth0 nodad
        in_ns $NS1 ip addr add 10.213.9.9/32 dev eth0 # the spoofed source
        ip route add 10.213.9.9/32 dev $BR1
        sysctl -qw net.ipv4.conf.$UP.forwarding=1

        # Seat traffic is routed explicitly: to the test ranges via the uplink, to the seat
        # bridges, and nowhere else (never the main table's default route to eth0).
        ip route add 198.51.100.0/24 dev $UP table $RT
        ip route add 203.0.113.0/24 dev $UP table $RT
        ip route add 169.254.169.254/32 dev $UP table $RT
        ip route add 10.213.0.4/30 dev $BR1 table $RT
        ip route add 10.213.0.8/30 dev $BR2 table $RT
        ip route add blackhole default table $RT
        ip rule add iif $BR1 lookup $RT pref 2130
        ip rule add iif $BR2 lookup $RT pref 2131

        serve $NSO serve-tcp 198.51.100.10 8080
        serve $NSO serve-tcp 198.51.100.10 8081
        serve $NSO serve-udp 198.51.100.10 8080
        serve $NSO serve-tcp 203.0.113.10 8080
        serve $NSO serve-tcp 169.254.169.254 80
        serve $NSO serve-dns 198.51.100.53
        serve $NSO serve-dns 203.0.113.53
        serve host serve-tcp 10.213.0.5 2222
        serve host serve-udp 10.213.0.5 53
        serve host serve-tcp 198.51.100.1 2223
        serve host serve-tcp 2001:db8:5ea7::1 2224
        serve $NS2 serve-tcp 10.213.0.10 8080
        set +e
}

if ! (setup) >"$TMP/setup.log" 2>&1; then
        echo "Bail out! cannot build the test world: $(tail -n 3 "$TMP/setup.log" | tr '\n' ' ')"
        exit 1
fi

# Wait (bounded) until the servers answer.
for i in $(seq 1 50); do
        probe tcp 198.51.100.10 8080 && probe tcp 10.213.0.5 2222 && in_ns $NS1 "$PROBE" tcp 10.213.0.10 8080 >/dev/null 2>&1 && break
        sleep 0.1
done

cat >"$TMP/profile" <<'EOF'
# seat nt1: one web server and one resolver
allow tcp 198.51.100.10/32 port 8080
dns 198.51.100.53
ipv6 deny
capture off
EOF
printf 'allow tcp 198.51.100.10 port 8080\n' >"$TMP/profile2"
SEAT1+=(--profile "$TMP/profile")
SEAT2+=(--profile "$TMP/profile2")

# name | probe arguments (run in the guest netns)
ALLOWED=(
        "allowed server 198.51.100.10 tcp/8080|tcp 198.51.100.10 8080"
        "allowed DNS server 198.51.100.53|dns 198.51.100.53 example.test"
)
BLOCKED=(
        "blocked server by IP 203.0.113.10 tcp/8080|tcp 203.0.113.10 8080"
        "allowed server, other port tcp/8081|tcp 198.51.100.10 8081"
        "allowed server, other protocol udp/8080|udp 198.51.100.10 8080"
        "allowed server, ICMP echo|icmp 198.51.100.10"
        "metadata service 169.254.169.254 tcp/80|tcp 169.254.169.254 80"
        "DNS server not in the profile 203.0.113.53|dns 203.0.113.53 example.test"
        "host bridge address tcp/2222|tcp 10.213.0.5 2222"
        "host bridge address udp/53 (a resolver on the host)|udp 10.213.0.5 53"
        "host bridge address ICMP echo|icmp 10.213.0.5"
        "host's other address 198.51.100.1 tcp/2223|tcp 198.51.100.1 2223"
        "IPv6 to the host 2001:db8:5ea7::1 tcp/2224|tcp 2001:db8:5ea7::1 2224"
        "another seat's guest 10.213.0.10 tcp/8080|tcp 10.213.0.10 8080"
        "spoofed source 10.213.9.9 to the allowed server|tcp 198.51.100.10 8080 10.213.9.9"
)

# --- without the filter: the world is wired (every path works) -----------------------
for c in "${ALLOWED[@]}" "${BLOCKED[@]}"; do
        IFS='|' read -r name args <<<"$c"
        # shellcheck disable=SC2086
        check "unfiltered control: $name reachable" probe $args
done
check "unfiltered control: some port of the host bridge answers a scan" bash -c "! ip netns exec $NS1 $PROBE scan 10.213.0.5 >/dev/null 2>&1"

# --- install --------------------------------------------------------------------------
check "install refused without CAP_NET_ADMIN (the seat would not start)" \
        bash -c "! setpriv --inh-caps=-all --bounding-set=-all '$NFTEST' install ${SEAT1[*]} 2>'$TMP/noperm.err'"
diag "refusal: $(head -c 300 "$TMP/noperm.err" | tr '\n' ' ')"
check "refused install left no chains" bash -c "! nft list chain inet seatd out-$BR1 >/dev/null 2>&1"
if "$NFTEST" install "${SEAT1[@]}" 2>"$TMP/install.err"; then ok "install seat nt1 (installed, read back, compared)"; else
        not_ok "install seat nt1: $(cat "$TMP/install.err")"; fi
check "install seat nt2" "$NFTEST" install "${SEAT2[@]}"
check "verify seat nt1: ok" bash -c "[[ \$('$NFTEST' verify ${SEAT1[*]}) == ok ]]"
check "reinstall replaces the seat's chains in one transaction" "$NFTEST" install "${SEAT1[@]}"

# --- with the filter --------------------------------------------------------------------
for c in "${ALLOWED[@]}"; do
        IFS='|' read -r name args <<<"$c"
        # shellcheck disable=SC2086
        check "filtered: $name works (positive control)" probe $args
done
for c in "${BLOCKED[@]}"; do
        IFS='|' read -r name args <<<"$c"
        before=$(denied)
        # shellcheck disable=SC2086
        if probe $args; then res=reached; else res=failed; fi
        after=$(denied)
        if [[ $res == failed && $after -gt $before ]]; then
                ok "filtered: $name fails and is counted (denied $before -> $after)"
        else
                not_ok "filtered: $name: $res, denied $before -> $after"
        fi
done

# Spoofed MAC: the guest changes its MAC and tries the allowed server.
before=$(denied)
in_ns $NS1 ip link set eth0 address 52:54:00:aa:bb:cc
if probe tcp 198.51.100.10 8080; then res=reached; else res=failed; fi
in_ns $NS1 ip link set eth0 address $MAC1
after=$(denied)
if [[ $res == failed && $after -gt $before ]]; then ok "filtered: spoofed MAC fails and is counted (denied $before -> $after)"
else not_ok "filtered: spoofed MAC: $res, denied $before -> $after"; fi
check "filtered: allowed server works again with the real MAC" probe tcp 198.51.100.10 8080

# Every TCP port of the host's bridge address.
before=$(denied)
t0=$(date +%s)
if in_ns $NS1 "$PROBE" scan 10.213.0.5 >"$TMP/scan.out" 2>&1; then res=failed; else res="answered: $(head -c 200 "$TMP/scan.out")"; fi
after=$(denied)
if [[ $res == failed && $((after - before)) -ge 65535 ]]; then
        ok "filtered: all 65535 TCP ports of the host bridge address fail and are counted (denied +$((after - before)), $(( $(date +%s) - t0 )) s)"
else
        not_ok "filtered: host bridge port scan: $res, denied $before -> $after"
fi

if dmesg >/dev/null 2>&1; then
        logged=$(dmesg | grep -c "seatd-deny nt1 ")
        check "denied packets logged with prefix 'seatd-deny nt1' (rate-limited: $logged lines)" test "$logged" -gt 0
fi

# --- tamper detection ------------------------------------------------------------------
# watch_for DESCRIPTION COMMAND...: start the watcher, run the command, report the window.
watch_for() {
        local d=$1; shift
        local out=$TMP/watch.out line t0 at
        rm -f "$out"
        "$NFTEST" watch "${SEAT1[@]}" --timeout-ms 10000 --interval-ms 2000 >"$out" 2>"$TMP/watch.err" &
        local wpid=$!
        PIDS+=($wpid)
        for i in $(seq 1 100); do grep -q ready "$out" 2>/dev/null && break; sleep 0.05; done
        if ! grep -q ready "$out" 2>/dev/null; then
                not_ok "$d: watcher did not start: $(cat "$TMP/watch.err")"
                kill $wpid 2>/dev/null; wait $wpid 2>/dev/null
                return
        fi
        t0=$(date +%s%3N)
        "$@"
        wait $wpid
        line=$(grep detected "$out")
        if [[ $line == *"via=netlink"* ]]; then
                at=${line##*at_ms=}
                ok "$d: detected via netlink in $((at - t0)) ms (${line%% at_ms=*})"
        else
                not_ok "$d: ${line:-not detected} $(cat "$TMP/watch.err")"
        fi
}

# Flushing the whole table would also strip other seats' rules if a seatd runs here: do it
# only when the table holds nothing but this test's chains.
others=$(nft -j list table inet seatd | python3 -c '
import json, sys
print(sum(1 for x in json.load(sys.stdin)["nftables"] if "chain" in x and not x["chain"]["name"].endswith(("-seat-nt1", "-seat-nt2"))))')
if [[ $others == 0 ]]; then
        watch_for "nft flush table inet seatd" nft flush table inet seatd
else
        diag "table inet seatd holds $others other chains: flushing only this seat's chains"
        watch_for "nft flush chain (this seat's)" nft flush chain inet seatd out-$BR1
fi
check "after the flush, verify says the rules are not intact" bash -c "! '$NFTEST' verify ${SEAT1[*]} >/dev/null 2>&1"
check "re-protect: install again" "$NFTEST" install "${SEAT1[@]}"
check "re-protect seat nt2 too (the flush took its rules as well)" "$NFTEST" install "${SEAT2[@]}"
check "re-protected: blocked server fails again" bash -c "! ip netns exec $NS1 $PROBE tcp 203.0.113.10 8080"
check "re-protected: allowed server works" probe tcp 198.51.100.10 8080

handle=$(nft -a list chain inet seatd out-$BR1 | awk '/198.51.100.10 tcp dport 8080/ { print $NF; exit }')
watch_for "one rule changed (allow 198.51.100.10 -> 203.0.113.10)" \
        nft replace rule inet seatd out-$BR1 handle "$handle" ip daddr 203.0.113.10 tcp dport 8080 counter accept
check "re-protect after the change" "$NFTEST" install "${SEAT1[@]}"
watch_for "rule added at the top of the seat's chain" nft insert rule inet seatd out-$BR1 counter accept
check "re-protect after the insert" "$NFTEST" install "${SEAT1[@]}"
watch_for "seat's chains deleted" bash -c "nft flush chain inet seatd fwd-$BR1 && nft delete chain inet seatd fwd-$BR1"
check "re-protect after the delete" "$NFTEST" install "${SEAT1[@]}"
check "another seat's change is not reported for seat nt1 (watch times out)" bash -c "
        '$NFTEST' watch ${SEAT1[*]} --timeout-ms 1500 --interval-ms 1000 >'$TMP/w2.out' 2>/dev/null &
        w=\$!; for i in \$(seq 1 100); do grep -q ready '$TMP/w2.out' 2>/dev/null && break; sleep 0.05; done
        nft insert rule inet seatd out-$BR2 counter accept
        ! wait \$w"
check "seat nt2's change is seen by its own verify" bash -c "[[ \$('$NFTEST' verify ${SEAT2[*]} 2>/dev/null) == changed ]]"

# --- release ----------------------------------------------------------------------------
check "remove seat nt1" "$NFTEST" remove "${SEAT1[@]}"
check "removed: its chains are gone" bash -c "! nft list chain inet seatd out-$BR1 >/dev/null 2>&1"
check "removed: verify says missing" bash -c "[[ \$('$NFTEST' verify ${SEAT1[*]} 2>/dev/null) == missing ]]"
check "seat nt2's chains survive nt1's removal" bash -c "nft list chain inet seatd out-$BR2 >/dev/null"

echo "1..$n"
[[ $failed == 0 ]]
