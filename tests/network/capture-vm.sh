#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Packet capture from a real seat (issue 18, "Capture"; docs/egress.md): a private seatd
# with an uplink into the test world (world.sh) and a profile that says
# "capture on snaplen 200 max_mib 1", sealing to a facilitator key of this suite.
#  1. Traffic of a known size (10 UDP datagrams of 600 bytes to the world's echo server,
#     each with a key) is in the sealed archive's pcapng, read by tcpdump: 10 requests and
#     10 replies of 642 bytes on the wire, every packet cut at 200 bytes, the cut counted in
#     the signed manifest.
#  2. Handover: the old guest sends keyed datagrams until the reset takes it; the next
#     session's capture holds none of them (and the last session's does).
#  3. A bounded flood (ping -A, 4000 echoes of 1400 bytes) in the next session: its files
#     stay under 1 MiB, the first file is kept, the rotation is recorded in the manifest.
#
# usage: capture-vm.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
PROBE=$build/tests/network/guest-probe
harness_vm_suite capture-vm "$PROBE"
need_cmd -h "scripts/lib/host.sh installs it" virsh ip nft python3 tcpdump guestfish
# shellcheck source=world.sh
. "$HARNESS_SRC/tests/network/world.sh"
need_libvirt --start

UPLINK=sdw-up3
POOL=10.223.0.0/24
TABLE=5223
export WORLD_NS=seatd-w-cap WORLD_NET=10.255.3
CAP_MAX=$((1 << 20))
sender=
capture_vm_cleanup() {
  local p='' d
  kill_wait "$sender"
  [[ -n $seatd_pid ]] && p=$(pgrep -P "$seatd_pid" 2>/dev/null)
  seatd_kill
  for d in $p; do kill "$d" 2>/dev/null; done
  return 0
}
harness_on_exit capture_vm_cleanup
unset SEATD_TOKEN

wait_for() { local end=$((SECONDS + $1)); shift; until "$@" >/dev/null 2>&1; do ((SECONDS < end)) || return 1; sleep 0.5; done; }
archive_of() { ls "$t/archives/$1-g$2-"*.seatdev 2>/dev/null | head -1; }
has_archive() { [[ -n $(archive_of "$1" "$2") ]]; }
cap() { "$CTL" --json status "$1" | json_field "d['network']['capture']['$2']"; }
# open_archive SEAT GENERATION DIR: verified and unpacked into DIR, the manifest in DIR.json
open_archive() {
  "$CTL" --json evidence open "$(archive_of "$1" "$2")" --key "$t/facilitator.key" --out "$3" >"$3.json" 2>"$t/out"
}
man() { json_field "$2" <"$1.json"; }
# pcaps DIR: the opened capture members, in order
pcaps() { ls "$1" | grep -E -- '-capture-[0-9]{4}\.pcapng$' | sort -t- -k3,3 | sed "s|^|$1/|"; }
# read_all DIR FILTER...: tcpdump reads every capture file; one line per packet
read_all() {
  local d=$1 f; shift
  for f in $(pcaps "$d"); do tcpdump -nn -e -r "$f" "$@" 2>>"$t/tcpdump.err" || echo "TCPDUMP-FAILED $f"; done
}
ascii_all() {
  local d=$1 f; shift
  for f in $(pcaps "$d"); do tcpdump -nn -A -r "$f" "$@" 2>>"$t/tcpdump.err" || echo "TCPDUMP-FAILED $f"; done
}
# caplens FILE...: the largest captured length of any packet (pcapng enhanced packet blocks)
max_caplen() {
  python3 - "$@" <<'PY'
import struct, sys
m = 0
for path in sys.argv[1:]:
    b = open(path, "rb").read()
    off = 0
    while off + 12 <= len(b):
        typ, ln = struct.unpack_from("<II", b, off)
        if ln < 12 or off + ln > len(b):
            sys.exit("bad block in %s at %d" % (path, off))
        if typ == 6:
            m = max(m, struct.unpack_from("<I", b, off + 20)[0])
        off += ln
print(m)
PY
}

# ---------------------------------------------------------------- the world and seatd
mkdir -p "$t/archives"
guestfs_cache_shared  # the appliance the seal reads the guest's files with
world_seatd "$UPLINK" "$POOL" "$TABLE"
world_up "$UPLINK" >"$t/out" 2>&1 || { cat "$t/out"; bail "the test world did not come up"; }
cat >"$t/egress/cap.profile" <<EOF
allow udp $WORLD_ALLOWED port 8080
allow icmp $WORLD_ALLOWED
capture on snaplen 200 max_mib 1
EOF
"$SIGN" keygen --box -p "$t/facilitator.pub" -s "$t/facilitator.key" >/dev/null 2>&1 || bail "seat-sign keygen --box failed"
seatd_conf accel=tcg allow_tcg=true inspect_images=false warm_reset=false "${world_seatd_keys[@]}" \
  "facilitator_key=$t/facilitator.pub" "evidence_archive_dir=$t/archives" evidence_collect_user=nobody
seatd_start
image_import --guest-tool "$PROBE"
"$CTL" -q provision --image test-image --egress cap >"$t/prov" 2>"$t/out" || { cat "$t/out"; bail "provision failed"; }
S=$(awk 'NR==2 {print $1}' "$t/prov")
[[ -n $S ]] || bail "no seat"
[[ $(cap "$S" on) == True && $(cap "$S" snaplen) == 200 && $(cap "$S" max_bytes) == "$CAP_MAX" ]] \
  && ok "status: the capture is on (snaplen 200, at most 1 MiB)" || { "$CTL" --json status "$S" >"$t/out"; not_ok "status: the capture is on"; }
"$CTL" status "$S" >"$t/out" 2>&1
grep -q "^capture: on, [0-9]* packets seen" "$t/out" && ok "seatctl status prints the capture line" || not_ok "seatctl status prints the capture line"

# ---------------------------------------------------------------- 1. traffic of a known size
KEY1=k1$RANDOM$RANDOM
PAD=$(head -c 600 /dev/zero | tr '\0' x)
# 600 bytes of payload: KEY1-NN- then padding
"$CTL" exec --timeout 120 "$S" -- /bin/sh -c "for i in 10 11 12 13 14 15 16 17 18 19; do
  p=\"$KEY1-\$i-$PAD\"; /bin/guest-probe --timeout-ms 3000 --send \"\$(echo \"\$p\" | head -c 600)\" udp $WORLD_ALLOWED 8080 || exit 1; done" \
  >"$t/out" 2>&1 && ok "the guest sent 10 datagrams of 600 bytes to the world's echo server, all answered" \
  || not_ok "the guest sent 10 datagrams of 600 bytes to the world's echo server"
# (the capture hands over a block every 200 ms: the count is awaited, not read after a sleep)
pk=
wait_until 'pk=$(cap "$S" packets); ((${pk:-0} >= 20))'
((pk >= 20)) && ok "status counts the packets while the session runs ($pk)" || not_ok "status counts the packets while the session runs ($pk)"

# ---------------------------------------------------------------- 2. handover
# The old guest goes on sending keyed datagrams until the reset takes it; the reset comes
# once it has sent three (it says so after each), however slowly the guest runs.
"$CTL" exec --timeout 300 "$S" -- /bin/sh -c "i=0; while [ \$i -lt 1500 ]; do
  /bin/guest-probe --timeout-ms 200 --send $KEY1-late-\$i udp $WORLD_ALLOWED 8080 >/dev/null; echo sent-\$i; i=\$((i+1)); sleep 0.1; done" \
  >"$t/sender" 2>&1 &
sender=$!
wait_until '(($(grep -c "^sent-" "$t/sender") >= 3)) || ! kill -0 "$sender" 2>/dev/null'
"$CTL" -q reset "$S" >"$t/out" 2>&1 && ok "reset while the old guest sends" || not_ok "reset while the old guest sends"
kill_wait "$sender"; sender=
[[ $(cap "$S" on) == True ]] && ok "the new session's capture runs" || not_ok "the new session's capture runs"
wait_for 300 has_archive "$S" 1 && ok "the first session is sealed" || not_ok "the first session is sealed"

# ---------------------------------------------------------------- 3. a bounded flood
KEY2=k2$RANDOM$RANDOM
"$CTL" exec --timeout 200 "$S" -- /bin/sh -c "/bin/guest-probe --timeout-ms 3000 --send $KEY2-first udp $WORLD_ALLOWED 8080 >/dev/null;
  ping -A -q -s 1400 -c 4000 -w 150 $WORLD_ALLOWED; /bin/guest-probe --timeout-ms 3000 --send $KEY2-last udp $WORLD_ALLOWED 8080" \
  >"$t/out" 2>&1 && ok "the guest flooded the world's host with 4000 echoes of 1400 bytes ($(grep -o '[0-9]* packets received' "$t/out"))" \
  || not_ok "the guest flooded the world's host with 4000 echoes of 1400 bytes"
wait_until 'rot=$(cap "$S" files_rotated); ((${rot:-0} > 0))' # (the capture's blocks come every 200 ms)
b=$(cap "$S" bytes) rot=$(cap "$S" files_rotated) drops=$(cap "$S" drops)
((b <= CAP_MAX && rot > 0)) && ok "status during the flood: $b bytes in $(cap "$S" files) files (at most $CAP_MAX), $rot rotated away, drops $drops" \
  || { "$CTL" --json status "$S" >"$t/out"; not_ok "status during the flood: files under the cap, rotation counted ($b bytes, $rot rotated)"; }
# The guest's last datagrams, and the release at once: they are in the kernel's open block
# (retired only at its 200 ms timeout) when the capture stops, and must still be in the files.
"$CTL" exec --timeout 60 "$S" -- /bin/sh -c "for i in 1 2 3 4 5; do
  /bin/guest-probe --timeout-ms 3000 --send $KEY2-final-\$i udp $WORLD_ALLOWED 8080 >/dev/null || exit 1; done" \
  >"$t/out" 2>&1 && ok "the guest's last 5 datagrams before the release were answered" \
  || not_ok "the guest's last 5 datagrams before the release were answered"
"$CTL" -q release "$S" >"$t/out" 2>&1 && ok "release" || not_ok "release"
wait_for 300 has_archive "$S" 2 && ok "the second session is sealed" || not_ok "the second session is sealed"

# ---------------------------------------------------------------- the first archive
check_cmd "evidence verify of the first archive" "$CTL" evidence verify "$(archive_of "$S" 1)"
open_archive "$S" 1 "$t/a1" && ok "evidence open of the first archive" || not_ok "evidence open of the first archive"
n1=$(pcaps "$t/a1" | wc -l)
((n1 >= 1)) && ok "the first archive holds $n1 pcapng capture member(s)" || { ls "$t/a1" >"$t/out"; not_ok "the first archive holds pcapng capture members"; }
read_all "$t/a1" "udp and host $WORLD_ALLOWED and port 8080 and greater 600" >"$t/known"
req=$(grep -c "> $WORLD_ALLOWED.8080: UDP, length 600" "$t/known") rep=$(grep -c "$WORLD_ALLOWED.8080 > .*: UDP, length 600" "$t/known")
wire=$(grep -E "UDP, length 600" "$t/known" | grep -c "length 642:")
keyed=$(ascii_all "$t/a1" "udp port 8080" | grep -cE "$KEY1-1[0-9]-x")
cp "$t/known" "$t/out"
! grep -q TCPDUMP-FAILED "$t/known" && ((req == 10 && rep == 10 && wire == 20 && keyed == 20)) \
  && ok "tcpdump reads the known traffic in the sealed pcapng: 10 requests, 10 replies, 642 bytes each on the wire, all 20 keyed" \
  || not_ok "tcpdump reads the known traffic: requests $req, replies $rep (want 10, 10), 642 bytes on the wire $wire (want 20), keyed $keyed (want 20)"
ml=$(max_caplen $(pcaps "$t/a1"))
[[ $ml == 200 ]] && ok "every packet is cut at the snaplen: at most 200 bytes captured" || not_ok "every packet is cut at the snaplen (largest: $ml)"
cut=$(man "$t/a1" "d['manifest']['capture']['packets_cut']") bcut=$(man "$t/a1" "d['manifest']['capture']['bytes_cut']")
((cut >= 20 && bcut >= 20 * 442)) && [[ $(man "$t/a1" "d['manifest']['capture']['complete']") == False ]] \
  && ok "the signed manifest records the cut: $cut packets, $bcut bytes left out, capture incomplete" \
  || { man "$t/a1" "d['manifest'].get('capture')" >"$t/out"; not_ok "the signed manifest records the cut ($cut packets, $bcut bytes)"; }
late1=$(ascii_all "$t/a1" "udp port 8080" | grep -c "$KEY1-late-")
((late1 > 0)) && ok "control: the first session's capture holds the old guest's last datagrams ($late1)" || not_ok "control: the first session's capture holds the old guest's last datagrams"

# ---------------------------------------------------------------- the second archive
check_cmd "evidence verify of the second archive" "$CTL" evidence verify "$(archive_of "$S" 2)"
open_archive "$S" 2 "$t/a2" && ok "evidence open of the second archive" || not_ok "evidence open of the second archive"
old=$(ascii_all "$t/a2" | grep -c "$KEY1") raw=$(cat $(pcaps "$t/a2") /dev/null | grep -ac "$KEY1")
new=$(ascii_all "$t/a2" "udp port 8080" | grep -c "$KEY2-last")
((old == 0 && raw == 0 && new > 0)) && ok "handover: the new session's capture holds none of the old guest's packets (and its own last datagram)" \
  || not_ok "handover: the new session's capture holds none of the old guest's packets (old key seen $old/$raw times, own key $new)"
final=$(ascii_all "$t/a2" "udp port 8080" | grep -c "$KEY2-final-")
((final == 10)) && ok "the last datagrams before the release are in the capture: 5 requests and 5 replies" \
  || not_ok "the last datagrams before the release are in the capture: $final of 10 (5 requests, 5 replies)"
total=0
for f in $(pcaps "$t/a2"); do total=$((total + $(stat -c %s "$f"))); done
n2=$(pcaps "$t/a2" | wc -l)
((total <= CAP_MAX && n2 >= 2)) && ok "the flood's files stay under max_mib: $total bytes in $n2 files" || not_ok "the flood's files stay under max_mib: $total bytes in $n2 files"
read_all "$t/a2" >"$t/flood"
! grep -q TCPDUMP-FAILED "$t/flood" && ok "tcpdump reads every rotated file ($(wc -l <"$t/flood") packets)" || { cp "$t/tcpdump.err" "$t/out"; not_ok "tcpdump reads every rotated file"; }
# (grep -c, not -q: an early exit would fail tcpdump's pipe under pipefail)
f1=$(pcaps "$t/a2" | grep -- '-capture-0001\.pcapng$')
first=$([[ -n $f1 ]] && tcpdump -nn -A -r "$f1" udp port 8080 2>/dev/null | grep -c "$KEY2-first")
[[ ${first:-0} -gt 0 ]] && ok "the first file (the session's start, with its first datagram) is kept through the flood" \
  || { pcaps "$t/a2" >"$t/out"; not_ok "the first file (the session's start) is kept through the flood"; }
m() { man "$t/a2" "d['manifest']['capture']['$1']"; }
[[ $(m complete) == False ]] && (($(m files_rotated) > 0 && $(m packets_rotated) > 0 && $(m bytes_rotated) > 0)) &&
  [[ $(m files) == "$n2" && $(m bytes) == "$total" && $(m max_bytes) == "$CAP_MAX" ]] \
  && ok "the signed manifest records the rotation: $(m files_rotated) files, $(m packets_rotated) packets, $(m bytes_rotated) bytes rotated away; $(m kernel_drops) dropped by the kernel" \
  || { man "$t/a2" "d['manifest'].get('capture')" >"$t/out"; not_ok "the signed manifest records the rotation"; }
kept=$(wc -l <"$t/flood")
(($(m packets) == kept + $(m packets_rotated) + $(m packets_unwritten))) \
  && ok "every packet seen is in a file or counted as lost ($(m packets) = $kept + $(m packets_rotated))" \
  || not_ok "every packet seen is in a file or counted as lost ($(m packets) vs $kept + $(m packets_rotated) + $(m packets_unwritten))"
"$CTL" evidence verify "$(archive_of "$S" 2)" >"$t/out" 2>&1
grep -q "capture: INCOMPLETE" "$t/out" && ok "evidence verify says the capture is incomplete" || not_ok "evidence verify says the capture is incomplete"

tap_end
