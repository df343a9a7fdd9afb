#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What the egress filter costs (docs/egress.md):
#   1. TCP throughput and connection rate from a guest to an allowed server in the test
#      world, through the seat's filter (network/nft.c via nftest) and through the very same
#      bridge, routing and uplink with no filter; medians of 7 runs each, interleaved;
#   2. the same TCP throughput through the filter with the seat's packet capture on
#      (network/capture.c via captest, as seatd runs it for "capture on": snaplen 65535,
#      64 MiB of files, rotated) against the filter alone, interleaved with the above;
#   3. seatd provision time (real VMs) with a 500-entry allowlist and with none;
#   4. from inside a real seat (guest-probe's own clock): a name that was never looked up
#      is resolved (the seat's resolver asks the world's DNS server and adds the answer to
#      the seat's set), and the first connection to it, made at once, is timed against the
#      same connection to an allowed address; a new name each run (*.bench.test), medians
#      of 11, interleaved, timed to the µs. The first connection is where the set can cost:
#      a SYN sent before dnsmasq had added the address would be dropped and resent a
#      second later. The lookup is timed apart (name_lookup_ms), and with it
#      (name_with_lookup_*): a lookup is one more guest round trip, so that ratio cannot
#      fall to 1.5 (docs/egress.md "Measured").
# Summary: egress: filtered_over_unfiltered=R conn_filtered_over_unfiltered=R provision_500_over_0=R
#          capture_over_filtered=R name_first_connect_ms=N name_over_ip=R name_lookup_ms=N
#          name_with_lookup_ms=N name_with_lookup_over_ip=R
#          dnsguard_lookup_ms=N direct_lookup_ms=N resolver_new_name_ms=N (5. the DNS path,
#          from the host: the guard's hop, and a new name through the seat's resolver)
#
# usage: bench-egress.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR}"
NFTEST=$build/tests/network/nftest
CAPTEST=$build/tests/network/captest
PROBE=$build/tests/network/guest-probe
need_built "$NFTEST" "$CAPTEST" "$PROBE"
need_root
# shellcheck source=../network/world.sh
. "$HARNESS_SRC/tests/network/world.sh"

UP=sdb-up0 BR=seat-bench VETH=sdb-g1 GNS=seatd-b-g1 TABLE=216 # world_route: rule pref TABLE*10 must come before main (32766)
GUEST=10.216.0.2 HOST=10.216.0.1 MAC=52:54:00:d5:01:01
harness_workdir /var/tmp/seatd-bench-egress 0755
SEAT=(--seat bench --bridge $BR --uplink $UP --guest $GUEST --mac $MAC --profile "$t/bench.profile")
# seatd first, then the filter and the test world it was routed through
capt=
harness_on_exit 'kill_wait "$capt"; seatd_stop; "$NFTEST" remove "${SEAT[@]}" >/dev/null 2>&1; world_unroute $TABLE >/dev/null 2>&1
  world_guest_down $GNS $BR $VETH >/dev/null 2>&1; ip route del $WORLD_DNS/32 2>/dev/null; world_down >/dev/null 2>&1'

# Names for the first-connection runs: each is looked up once.
# Names for the first-connection runs (0 the warm-up, 1-11) and the host's lookups through the seat's
# resolver (101-121): each is looked up once.
for i in $(seq 0 11) $(seq 101 121); do WORLD_ZONE+=("n$i.bench.test=$WORLD_ALLOWED"); done
world_up $UP >/dev/null || { echo "bench-egress: the test world did not come up" >&2; exit 1; }
world_guest_up $GNS $BR $VETH $HOST $GUEST/30 $MAC || exit 1
world_route $TABLE $BR || exit 1
echo "allow tcp $WORLD_ALLOWED port 5201-5202" >"$t/bench.profile"

# The server: a sink on 5201 (reads until EOF, says how much) and an accept-and-close on 5202.
cat >"$t/srv.py" <<'PY'
import socket, sys, threading
host = sys.argv[1]
def sink():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, 5201)); s.listen(16)
    while True:
        c, _ = s.accept()
        n = 0
        while True:
            b = c.recv(1 << 20)
            if not b: break
            n += len(b)
        c.sendall(str(n).encode()); c.close()
def closer():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, 5202)); s.listen(1024)
    while True:
        s.accept()[0].close()
threading.Thread(target=sink, daemon=True).start()
closer()
PY
cat >"$t/cli.py" <<'PY'
import socket, sys, time
host, what, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
socket.setdefaulttimeout(10) # a stalled path fails the run instead of hanging it
end = time.monotonic() + secs
if what == "bulk":
    c = socket.create_connection((host, 5201)); buf = b"\0" * (1 << 20); n = 0; t0 = time.monotonic()
    while time.monotonic() < end:
        c.sendall(buf); n += len(buf)
    c.shutdown(socket.SHUT_WR); got = int(c.recv(64)); dt = time.monotonic() - t0
    print("%.1f" % (got / dt / (1 << 20)))
else:
    k = 0; t0 = time.monotonic()
    while time.monotonic() < end:
        c = socket.create_connection((host, 5202)); c.close(); k += 1
    print("%.0f" % (k / (time.monotonic() - t0)))
PY
ip netns exec "$WORLD_NS" python3 "$t/srv.py" "$WORLD_ALLOWED" </dev/null >/dev/null 2>&1 &
echo $! >>"$WORLD_DIR/pids" # world_down stops it
sleep 0.5

# Forwarding on the uplink again before each run: another seatd's forwarding_lockdown
# (docs/egress.md) would switch it off for every interface but its own.
run() {
  sysctl -qw "net.ipv4.conf.$UP.forwarding=1" "net.ipv4.conf.$BR.forwarding=1"
  ip netns exec $GNS timeout 30 python3 "$t/cli.py" "$WORLD_ALLOWED" "$1" 1.5 || echo 0
}
: >"$t/bf" && : >"$t/bu" && : >"$t/cf" && : >"$t/cu" && : >"$t/bc"
# run_captured: bulk through the filter while captest records the bridge (its files in
# $t/cap, removed after each run); its counters go to $t/capstats.
run_captured() {
  rm -rf "$t/cap" && mkdir -p "$t/cap"
  "$CAPTEST" "$BR" "$t/cap" >"$t/capout" 2>&1 &
  capt=$!
  for _ in $(seq 1 50); do grep -q capturing "$t/capout" && break; sleep 0.1; done
  run bulk
  kill -TERM "$capt"; wait "$capt"; capt=
  tail -1 "$t/capout" >>"$t/capstats"
}
for i in 1 2 3 4 5 6 7; do
  "$NFTEST" install "${SEAT[@]}" >/dev/null || { echo "bench-egress: nftest install failed" >&2; exit 1; }
  run bulk >>"$t/bf"; run conn >>"$t/cf"
  run_captured >>"$t/bc"
  "$NFTEST" remove "${SEAT[@]}" >/dev/null
  run bulk >>"$t/bu"; run conn >>"$t/cu"
done
bf=$(median <"$t/bf") bu=$(median <"$t/bu") cf=$(median <"$t/cf") cu=$(median <"$t/cu") bc=$(median <"$t/bc")
echo "throughput MiB/s: filtered $(tr '\n' ' ' <"$t/bf")(median $bf), unfiltered $(tr '\n' ' ' <"$t/bu")(median $bu)"
echo "throughput MiB/s: filtered and captured $(tr '\n' ' ' <"$t/bc")(median $bc)"
echo "capture counters of the last run: $(tail -1 "$t/capstats" 2>/dev/null)"
echo "connections/s:    filtered $(tr '\n' ' ' <"$t/cf")(median $cf), unfiltered $(tr '\n' ' ' <"$t/cu")(median $cu)"

# ---------------------------------------------------------------- provision with 500 rules
mkdir -p "$t/egress"
for i in $(seq 0 499); do echo "allow tcp 198.51.100.$((i % 250 + 1)) port $((10000 + i))"; done >"$t/egress/big.profile"
cat >"$t/egress/names.profile" <<EOF
dns $WORLD_DNS
allow name *.bench.test tcp port 8080
allow tcp $WORLD_ALLOWED port 8081
EOF
bench_seatd warm_reset=false net_pool=10.217.0.0/24 "uplink=$UP" "uplink_gateway=$WORLD_NET.2" \
  route_table=5217 route_priority=5217 "egress_dir=$t/egress" -- --guest-tool "$PROBE"
prov() { # PROFILE -> ms
  local s0 ms id
  s0=$EPOCHREALTIME
  id=$("$CTL" -q provision --image test-image --egress "$1" | awk 'NR==2 {print $1}')
  ms=$(awk -v a="$s0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%d", (b - a) * 1000}')
  "$CTL" -q release "$id" >/dev/null 2>&1
  echo "$ms"
}
: >"$t/p0" && : >"$t/p500"
for i in 1 2 3; do prov none >>"$t/p0"; prov big >>"$t/p500"; done
p0=$(median <"$t/p0") p500=$(median <"$t/p500")
echo "provision ms:     none $(tr '\n' ' ' <"$t/p0")(median $p0), 500 rules $(tr '\n' ' ' <"$t/p500")(median $p500)"
# ---------------------------------------------------------------- a name's first connection
# The seat's resolver (on the host) asks the world's DNS server through the uplink.
ip route replace $WORLD_DNS/32 via $WORLD_NET.2 dev $UP
sid=$("$CTL" -q provision --image test-image --egress names | awk 'NR==2 {print $1}')
resolver=$("$CTL" --json status "$sid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["network"]["host"])')
probe_ms() { # guest-probe ARGS... -> its time in ms, to the µs (the whole probe: resolve, connect, one echo)
  "$CTL" exec --timeout 60 "$sid" -- /bin/guest-probe --timeout-ms 5000 "$@" >"$t/probe.out" 2>&1
  sed -n 's/.*result=ok.* us=\([0-9]*\) ms=[0-9]*$/\1/p' "$t/probe.out" | awk '{printf "%.3f\n", $1 / 1000}'
  # the lookup's share of a name probe, for where its time goes (into $t/lk)
  sed -n 's/.*result=ok.* lookup_us=\([0-9]*\) .*/\1/p' "$t/probe.out" | awk '{printf "%.3f\n", $1 / 1000}' >>"$t/lk"
  grep -q "result=ok" "$t/probe.out" || echo "bench-egress: guest-probe $*: $(head -c 300 "$t/probe.out")" >&2
}
# The guest's first run of each path, not counted: TCG translates guest code the first
# times it runs (the first name lookups took 17-25 ms, then 4-5).
probe_ms tcp "$WORLD_ALLOWED" 8081 --send hi --expect hi >/dev/null
probe_ms --resolver "$resolver" tcp n0.bench.test 8080 --send hi --expect hi >/dev/null
: >"$t/nm" && : >"$t/ip" && : >"$t/lk"
for i in $(seq 1 11); do
  probe_ms --resolver "$resolver" tcp "n$i.bench.test" 8080 --send hi --expect hi >>"$t/nm"
  probe_ms tcp "$WORLD_ALLOWED" 8081 --send hi --expect hi >>"$t/ip"
done
# Where a name's first connection spends its time, from the host (no guest, no TCG):
# - the seat's DNS guard's own hop (docs/egress.md "The DNS guard"): one lookup through the
#   guard (127.X.Y.Z, which asks the world and judges the answer) against the same lookup
#   asked of the world's server directly; medians of 21, interleaved;
# - a name never looked up, asked of the seat's resolver (libvirt's dnsmasq on the seat's
#   bridge address): dnsmasq, the guard, the world's server, and dnsmasq adding the answer
#   to the seat's set (nftset); a new name each time, median of 21.
guard=127.${resolver#*.}
read -r gq dq rq < <(python3 - "$guard" "$WORLD_DNS" "$resolver" <<'PYEOF'
import socket, statistics, struct, sys, time
def once(server, name=b"n1"):
    q = struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + bytes([len(name)]) + name + b"\x05bench\x04test\x00\x00\x01\x00\x01"
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    t0 = time.monotonic()
    s.sendto(q, (server, 53))
    m = s.recv(4096)
    ms = (time.monotonic() - t0) * 1000
    if len(m) < 12 or m[3] & 15 != 0 or m[6:8] == b"\0\0": # an answer, not a refusal
        raise OSError("no answer (rcode %d)" % (m[3] & 15 if len(m) > 3 else -1))
    return ms
g, d, r = [], [], []
reachable = True
for i in range(21):
    g.append(once(sys.argv[1]))
    d.append(once(sys.argv[2]))
    if reachable:
        try:
            r.append(once(sys.argv[3], b"n%d" % (101 + i)))
        except OSError as e: # said, and not asked again
            print("bench-egress: the seat's resolver from the host: %s" % e, file=sys.stderr)
            reachable = False
print("%.3f %.3f %s" % (statistics.median(g), statistics.median(d), "%.3f" % statistics.median(r) if r else "0"))
PYEOF
)
echo "DNS lookup ms from the host: through the seat's guard ${gq:-?} (median), the world's server directly ${dq:-?}, a new name through the seat's resolver ${rq:-?}"
"$CTL" -q release "$sid" >/dev/null 2>&1
nm=$(median <"$t/nm") ip=$(median <"$t/ip") lk=$(median <"$t/lk")
# The first connection to the freshly resolved name (each run's whole probe less its own
# lookup), against the address's: what the set of names costs the connection itself.
ac=$(paste "$t/nm" "$t/lk" | awk '{printf "%.3f\n", $1 - $2}' | median)
echo "first connection ms (inside the seat): new name $(tr '\n' ' ' <"$t/nm")(median $nm; its lookup $lk, the rest $ac), allowed address $(tr '\n' ' ' <"$t/ip")(median $ip)"
[[ $(wc -l <"$t/nm") == 11 && $(wc -l <"$t/ip") == 11 ]] || echo "bench-egress: some name or address probes failed" >&2

echo "egress: filtered_over_unfiltered=$(ratio "$bf" "$bu") conn_filtered_over_unfiltered=$(ratio "$cf" "$cu") provision_500_over_0=$(ratio "$p500" "$p0") throughput_mib_s=$bf conn_per_s=$cf provision_p50_ms=$p0 provision_500_p50_ms=$p500 capture_over_filtered=$(ratio "$bc" "$bf") captured_throughput_mib_s=$bc name_first_connect_ms=$ac name_over_ip=$(ratio "$ac" "$ip") name_lookup_ms=$lk name_with_lookup_ms=$nm name_with_lookup_over_ip=$(ratio "$nm" "$ip") dnsguard_lookup_ms=${gq:-0} direct_lookup_ms=${dq:-0} resolver_new_name_ms=${rq:-0}"
