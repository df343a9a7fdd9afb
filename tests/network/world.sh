# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# world.sh: the egress tests' outside world, in a network namespace (docs/egress.md).
# Source it; it defines functions and constants and runs nothing.
#
#   host: UPLINK (veth) $WORLD_NET.1/30 ----- wup0 $WORLD_NET.2/30 :netns $WORLD_NS
#   in the namespace (addresses on its lo, so all of them sit behind the one veth):
#     198.51.100.10   allowed server: TCP echo/HTTP and UDP echo on 8080 and 8081
#     203.0.113.10    blocked server: TCP echo/HTTP and UDP echo on 8080
#     169.254.169.254 fake cloud metadata: HTTP on 80
#     198.51.100.53   DNS (UDP and TCP): allowed.test -> 198.51.100.10, blocked.test ->
#     203.0.113.53    203.0.113.10, metadata.test -> 169.254.169.254 (the same zone on both;
#                     other names NXDOMAIN; WORLD_ZONE adds names, also CNAMEs, malformed
#                     and oversized answers: netprobe.py serve-dns)
#     *:9000/udp      the recorder: every datagram to any of the namespace's addresses is
#                     logged with the key guest-probe put in it (world_received KEY)
#   return route: 10.0.0.0/8 via $WORLD_NET.1 (seat subnets, for unfiltered controls)
#
# Functions (each returns non-zero on failure, with the reason on stderr):
#   world_lock                    wait (up to 10 min) for the machine-wide egress test lock
#                                 (held until the shell exits, fd 9). world_up takes it; a
#                                 test that installs or flushes seatd's table before
#                                 world_up takes it first
#   world_up UPLINK               take the lock, load the guard, build the namespace and
#                                 start the servers
#   world_down                    stop everything world_* started and delete it
#   world_route TABLE BRIDGE...   host side: policy routing from the bridges to the uplink
#   world_unroute TABLE           undo world_route
#   world_forwarding              forwarding on the uplink and routed bridges again where a
#                                 seatd switched it off (forwarding_lockdown); says so
#   world_serve NS|host CMD ARGS  start another netprobe.py server (stopped by world_down)
#   world_host_receiver ADDR PORT a recorder on the host (e.g. the seat bridge's address)
#   world_received KEY            prints the recorder lines for KEY; 0 when there is one
#   world_wait_received KEY [MS]  the same, waiting up to MS ms (default 120000: a bound
#                                 on a hang, for a TCG guest on a loaded host) for it
#   world_guest_up NS BRIDGE VETH HOST_IP GUEST_IP/PFX MAC   a namespace standing in for a
#                                 seat's guest, on its own bridge (isolated port)
#   world_guest_down NS BRIDGE VETH
#   world_skip_unless_usable TOOL...  for a TAP test: root, world.sh's own tools and these,
#                                 else a skip line for the whole test and exit 0
#   world_drop_empty_table        delete table inet seatd when it holds no chain and no set
#                                 (a test's own are gone by then; others' keep it)
#   world_on_exit FUNC            run FUNC on exit from this shell only (not from a forked
#                                 background job that is killed); INT and TERM exit 130
#
# Settings (environment, read by world_up): WORLD_NS (default seatd-w-out), WORLD_NET (the
# first three octets of the transfer /30, default 10.255.0), WORLD_DIR (pids, the
# recorder's log; default a fresh /tmp/seatd-world.XXXXXX, removed by world_down).
#
# Traffic rules (ENVIRONMENT.md): the guard is loaded first; forwarding is switched on per
# interface only (the bridges and the uplink), never globally and never towards eth0; the
# routing table used for seat traffic ends in a blackhole.

WORLD_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/lib/host.sh
. "$WORLD_LIB_DIR/../../scripts/lib/host.sh"

WORLD_NETPROBE=${WORLD_NETPROBE:-$WORLD_LIB_DIR/netprobe.py}
WORLD_ALLOWED=198.51.100.10
WORLD_BLOCKED=203.0.113.10
WORLD_METADATA=169.254.169.254
WORLD_DNS=198.51.100.53
WORLD_DNS_OTHER=203.0.113.53
WORLD_RECORD_PORT=9000
WORLD_ROUTED=()
WORLD_ZONE=(allowed.test=$WORLD_ALLOWED blocked.test=$WORLD_BLOCKED metadata.test=$WORLD_METADATA)

world_err() { echo "world: $*" >&2; return 1; }

world_skip_unless_usable() {
        local tool
        if [[ $(id -u) != 0 ]]; then
                echo "1..0 # SKIP needs root (network namespaces, nftables)"
                exit 0
        fi
        for tool in ip ss nft python3 bridge flock "$@"; do
                if ! command -v "$tool" >/dev/null; then
                        echo "1..0 # SKIP $tool is missing"
                        exit 0
                fi
        done
}

world_drop_empty_table() {
        if nft -j list table inet seatd 2>/dev/null | python3 -c \
                'import json,sys; sys.exit(any("chain" in x or "set" in x for x in json.load(sys.stdin)["nftables"]))'; then
                nft delete table inet seatd 2>/dev/null
        fi
        return 0
}

world_on_exit() {
        # A background job killed just after its fork runs these traps too: its $BASHPID
        # differs, so it does not run the cleanup. This shell's pid and FUNC are put in
        # now, on purpose.
        # shellcheck disable=SC2064
        trap "[[ \$BASHPID == $BASHPID ]] && $1" EXIT
        trap 'exit 130' INT TERM
}

WORLD_LOCK=/run/lock/seatd-egress-test.lock
WORLD_LOCKED=0
world_lock() {
        ((WORLD_LOCKED)) && return 0
        command -v flock >/dev/null || world_err "flock is missing (util-linux)" || return
        mkdir -p "${WORLD_LOCK%/*}" && exec 9>"$WORLD_LOCK" || world_err "cannot open $WORLD_LOCK" || return
        flock -w 600 9 || world_err "another egress test has held $WORLD_LOCK for 10 minutes" || return
        WORLD_LOCKED=1
}

# A server in the background; its pid goes to the pid file. Started as a plain command
# (not through a function), so the pid is the server's own and world_down can stop it.
world_serve() {
        local where=$1; shift
        [[ -n ${WORLD_DIR-} && -d $WORLD_DIR ]] || world_err "world_serve before world_up" || return
        if [[ $where == host ]]; then
                python3 "$WORLD_NETPROBE" "$@" </dev/null >>"$WORLD_DIR/servers.log" 2>&1 &
        else
                ip netns exec "$where" python3 "$WORLD_NETPROBE" "$@" </dev/null >>"$WORLD_DIR/servers.log" 2>&1 &
        fi
        echo $! >>"$WORLD_DIR/pids"
}

# Waits (bounded) until NS|host has N listening sockets on the given ports.
world_wait_listening() {
        local where=$1 want=$2 i n
        shift 2
        local ports=$*
        local count='{ x = $5; sub(/.*:/, "", x); if (index(p, " " x " ")) n++ } END { print n + 0 }'
        for i in $(seq 1 2400); do # (up to 120 s: servers start slowly on a loaded host)
                if [[ $where == host ]]; then n=$(ss -Hlntu | awk -v p=" $ports " "$count")
                else n=$(ip netns exec "$where" ss -Hlntu | awk -v p=" $ports " "$count"); fi
                ((n >= want)) && return 0
                sleep 0.05
        done
        world_err "servers in $where did not come up ($n of $want listening on $ports; see $WORLD_DIR/servers.log)"
}

# Refuses an address some other interface already routes (not the default route): a
# seatd on this machine hands out its net_pool (default 10.213.0.0/16) to real seats.
world_subnet_free() {
        local used
        used=$(ip -4 -o route show to match "$1" | grep -v '^default')
        [[ -z $used ]] || world_err "$1 is already routed here ($used): pick another subnet"
}

world_up() {
        local uplink=${1:?usage: world_up UPLINK}
        local ns=${WORLD_NS:-seatd-w-out} net=${WORLD_NET:-10.255.0} a
        [[ $(id -u) == 0 ]] || world_err "needs root" || return
        for a in ip ss nft python3; do command -v $a >/dev/null || world_err "$a is missing" || return; done
        [[ $uplink =~ ^[A-Za-z0-9_.-]{1,15}$ && $uplink != eth0 ]] || world_err "bad uplink name '$uplink'" || return
        [[ $net =~ ^10\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || world_err "WORLD_NET must be 10.X.Y, not '$net'" || return
        world_lock || return
        # The guard first, and it must be there (host_load_guard exits on failure: subshell).
        (host_load_guard) && nft list table inet seat_guard >/dev/null 2>&1 ||
                world_err "cannot load the guard ruleset (table inet seat_guard)" || return

        WORLD_NS=$ns WORLD_NET=$net WORLD_UPLINK=$uplink
        if [[ -z ${WORLD_DIR-} ]]; then
                WORLD_DIR=$(mktemp -d /tmp/seatd-world.XXXXXX) || return
                WORLD_DIR_OWNED=1
        fi
        mkdir -p "$WORLD_DIR" && : >"$WORLD_DIR/received" && chmod 0644 "$WORLD_DIR/received" || return
        # Leftovers of a run that was killed.
        ip netns del "$ns" 2>/dev/null
        ip link del "$uplink" 2>/dev/null
        world_subnet_free "$net.1" || return

        (
                set -e
                ip netns add "$ns"
                ip -n "$ns" link set lo up
                ip link add "$uplink" type veth peer name wup0 netns "$ns"
                ip addr add "$net.1/30" dev "$uplink"
                ip link set "$uplink" up
                ip -n "$ns" addr add "$net.2/30" dev wup0
                ip -n "$ns" link set wup0 up
                for a in $WORLD_ALLOWED $WORLD_BLOCKED $WORLD_METADATA $WORLD_DNS $WORLD_DNS_OTHER; do
                        ip -n "$ns" addr add "$a/32" dev lo
                done
                ip -n "$ns" route add 10.0.0.0/8 via "$net.1"
        ) || { world_err "cannot build namespace $ns"; return 1; }

        world_serve "$ns" serve-tcp $WORLD_ALLOWED 8080
        world_serve "$ns" serve-tcp $WORLD_ALLOWED 8081
        world_serve "$ns" serve-udp $WORLD_ALLOWED 8080
        world_serve "$ns" serve-udp $WORLD_ALLOWED 8081
        world_serve "$ns" serve-tcp $WORLD_BLOCKED 8080
        world_serve "$ns" serve-udp $WORLD_BLOCKED 8080
        world_serve "$ns" serve-tcp $WORLD_METADATA 80
        world_serve "$ns" serve-dns $WORLD_DNS "${WORLD_ZONE[@]}"
        world_serve "$ns" serve-dns $WORLD_DNS_OTHER "${WORLD_ZONE[@]}"
        world_serve "$ns" serve-record 0.0.0.0 $WORLD_RECORD_PORT "$WORLD_DIR/received"
        world_wait_listening "$ns" 12 8080 8081 80 53 $WORLD_RECORD_PORT
}

world_down() {
        local p pids=()
        if [[ -n ${WORLD_DIR-} && -f $WORLD_DIR/pids ]]; then
                mapfile -t pids <"$WORLD_DIR/pids"
                for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
                for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
                rm -f "$WORLD_DIR/pids"
        fi
        [[ -n ${WORLD_NS-} ]] && ip netns del "$WORLD_NS" 2>/dev/null
        [[ -n ${WORLD_UPLINK-} ]] && ip link del "$WORLD_UPLINK" 2>/dev/null
        if [[ ${WORLD_DIR_OWNED-} == 1 ]]; then
                rm -rf "$WORLD_DIR"
                unset WORLD_DIR WORLD_DIR_OWNED
        fi
        return 0
}

# world_seatd UPLINK POOL TABLE: a private seatd of tests/lib/seatd-harness.sh whose seats
# reach this world through UPLINK (world_up), their addresses from POOL, routed by TABLE:
# its keys in the array world_seatd_keys (for seatd_conf), its egress profiles in
# $t/egress; at exit, once the seatd and its seats are gone, the routes and the world go.
world_seatd() {
        world_seatd_keys=("net_pool=$2" "uplink=$1" "uplink_gateway=${WORLD_NET:-10.255.0}.2"
                "route_table=$3" "route_priority=$3" "egress_dir=$t/egress")
        mkdir -p "$t/egress"
        harness_on_exit --late "world_seatd_down $3"
}
world_seatd_down() {
        while ip rule del lookup "$1" 2>/dev/null; do :; done
        ip route flush table "$1" 2>/dev/null
        world_down >/dev/null 2>&1
}

# Policy routing for traffic entering from the seat bridges: the test ranges and the
# metadata address via the uplink, the bridges' own subnets (so that only the filter keeps
# seats apart), and a blackhole for everything else: never the main table's default route.
world_route() {
        local table=${1:?usage: world_route TABLE BRIDGE...} br prefix pref
        shift
        [[ -n ${WORLD_UPLINK-} ]] || world_err "world_route before world_up" || return
        (
                set -e
                for prefix in 198.51.100.0/24 203.0.113.0/24 $WORLD_METADATA/32; do
                        ip route replace "$prefix" via "$WORLD_NET.2" dev "$WORLD_UPLINK" table "$table"
                done
                pref=$((table * 10))
                for br in "$@"; do
                        for prefix in $(ip -4 -o route show dev "$br" proto kernel scope link | awk '{print $1}'); do
                                ip route replace "$prefix" dev "$br" table "$table"
                        done
                        ip rule add iif "$br" lookup "$table" pref $((pref++))
                        sysctl -qw "net.ipv4.conf.$br.forwarding=1"
                done
                ip route replace blackhole default table "$table"
                sysctl -qw "net.ipv4.conf.$WORLD_UPLINK.forwarding=1"
        ) || world_err "cannot set up routing table $table for $*" || return
        WORLD_ROUTED+=("$@")
}

# Any seatd on this machine with forwarding_lockdown (the default) switches forwarding off
# on every interface but its seat bridges and its own uplink, when it starts and whenever
# it installs a seat: a test world's uplink beside it stops forwarding. Put it back, and
# print what was off (for the test's log).
world_forwarding() {
        local i
        for i in ${WORLD_UPLINK-} "${WORLD_ROUTED[@]}"; do
                [[ -n $i && $(sysctl -n "net.ipv4.conf.$i.forwarding" 2>/dev/null) == 0 ]] || continue
                echo "net.ipv4.conf.$i.forwarding was switched off (a seatd's forwarding_lockdown?): on again"
                sysctl -qw "net.ipv4.conf.$i.forwarding=1"
        done
}

world_unroute() {
        local table=${1:?usage: world_unroute TABLE}
        WORLD_ROUTED=()
        while ip rule del lookup "$table" 2>/dev/null; do :; done
        ip route flush table "$table" 2>/dev/null
        return 0
}

world_host_receiver() {
        local addr=${1:?usage: world_host_receiver ADDR PORT} port=${2:?usage: world_host_receiver ADDR PORT}
        world_serve host serve-record "$addr" "$port" "$WORLD_DIR/received"
        world_wait_listening host 1 "$port"
}

world_received() {
        local key=${1:?usage: world_received KEY}
        [[ -n ${WORLD_DIR-} ]] || return 1
        grep -F "key=$key " "$WORLD_DIR/received"
}

world_wait_received() {
        local key=${1:?usage: world_wait_received KEY [MS]} ms=${2:-120000} i
        for ((i = 0; i < ms; i += 50)); do
                world_received "$key" && return 0
                sleep 0.05
        done
        return 1
}

world_guest_up() {
        local ns=$1 br=$2 veth=$3 hostip=$4 guest=$5 mac=$6
        [[ $# == 6 ]] || world_err "usage: world_guest_up NS BRIDGE VETH HOST_IP GUEST_IP/PFX MAC" || return
        local pfx=${guest#*/}
        ip netns del "$ns" 2>/dev/null
        ip link del "$br" 2>/dev/null
        ip link del "$veth" 2>/dev/null
        world_subnet_free "$hostip" || return
        (
                set -e
                ip netns add "$ns"
                ip -n "$ns" link set lo up
                ip link add "$br" type bridge
                ip addr add "$hostip/$pfx" dev "$br"
                ip link set "$br" up
                ip link add "$veth" type veth peer name eth0 netns "$ns"
                ip link set "$veth" master "$br"
                bridge link set dev "$veth" isolated on # like libvirt's <port isolated='yes'/>
                ip link set "$veth" up
                ip -n "$ns" link set eth0 address "$mac"
                ip -n "$ns" addr add "$guest" dev eth0
                ip -n "$ns" link set eth0 up
                ip -n "$ns" route add default via "$hostip"
        ) || world_err "cannot build guest namespace $ns on $br"
}

world_guest_down() {
        ip netns del "$1" 2>/dev/null
        ip link del "$3" 2>/dev/null
        ip link del "$2" 2>/dev/null
        return 0
}
