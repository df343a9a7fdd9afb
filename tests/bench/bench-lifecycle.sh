#!/usr/bin/env bash
# tests/bench/lifecycle: provision-to-ready, exec round trip through seatd, and reset, as
# medians, beside the naive script a sysadmin would write for a reset (virsh destroy, a
# new overlay, virsh create, wait for the agent) run in the same bench on the same image.
# Prints numbers; asserts nothing about time.
#   usage: bench-lifecycle.sh BUILD_DIR [RUNS]
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR [RUNS]}")
runs=${2:-5}
src=$(dirname "$(realpath "$0")")/../..
# shellcheck source=../lib/leftovers.sh
. "$src/tests/lib/leftovers.sh"
SIGN=$build/signing/seat-sign SEATD=$build/seatd/seatd CTL=$build/seatctl/seatctl

t=$(mktemp -d /var/tmp/seatd-bench-lifecycle.XXXXXX)
chmod 0755 "$t"
seatd_pid=
cleanup() {
  virsh -q -c qemu:///system destroy "naive-bench-$$" >/dev/null 2>&1 || true
  [[ -n $seatd_pid ]] && { "$CTL" --json list 2>/dev/null | python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)["seats"]]' 2>/dev/null | while read -r s; do "$CTL" -q release "$s" >/dev/null 2>&1; done; kill "$seatd_pid"; }
  wait 2>/dev/null; seat_leftovers_remove "$t/state"; rm -rf "$t"
}
trap cleanup EXIT
[[ -n ${BENCH_DEBUG:-} ]] && set -x
# bash's own clock: no process is started to read it (a python3 -c here cost ~30 ms a call).
ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : int((a[NR/2] + a[NR/2+1]) / 2)}'; }

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
"$SEATD" -c "$t/seatd.conf" -l warning 2>"$t/seatd.log" &
seatd_pid=$!
export SEATD_SOCKET=$t/ctl.sock
for _ in $(seq 1 1200); do [[ -S $SEATD_SOCKET ]] && break; sleep 0.05; done
"$CTL" -q image import "$t/img/manifest.json" >/dev/null

prov=() execs=() resets=() naive=()
seat=
for i in $(seq 1 "$runs"); do
  a=$(ms); s=$("$CTL" -q --json provision --image test-image | python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])'); b=$(ms)
  prov+=($((b - a)))
  if [[ -z $seat ]]; then seat=$s; else "$CTL" -q release "$s" >/dev/null; fi
done
for i in $(seq 1 $((runs * 4))); do
  a=$(ms); "$CTL" exec "$seat" -- /bin/true; b=$(ms)
  execs+=($((b - a)))
done
for i in $(seq 1 "$runs"); do
  a=$(ms); "$CTL" -q reset "$seat" >/dev/null; b=$(ms)
  resets+=($((b - a)))
done

# The naive cycle, on the same verified files, with the same domain settings.
blob() { "$CTL" --json image list | python3 -c "import json,sys; i=[x for x in json.load(sys.stdin)['images'] if x['name']=='test-image'][0]; print([f['identity'] for f in i['disks'] if f['file']=='$1'][0])"; }
store=$t/state/images/blobs
kernel=$store/$(blob vmlinux) initrd=$store/$(blob initramfs.img) base=$store/$(blob root.qcow2)
cmdline=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cmdline"])' "$t/img/image.json")
mkdir -p "$t/naive"
sed -e "s|@NAME@|naive-bench-$$|" -e "s|@MEMORY_MIB@|256|" -e "s|@KERNEL@|$kernel|" -e "s|@INITRD@|$initrd|" \
    -e "s|@CMDLINE@|$cmdline|" -e "s|@DISK@|$t/naive/overlay.qcow2|" -e "s|@CONSOLE_LOG@|$t/naive/console.log|" \
    "$src/images/recipes/test-domain.xml.in" >"$t/naive/domain.xml"
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
rm -f "$t/naive/overlay.qcow2"; qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$t/naive/overlay.qcow2"
virsh -q -c qemu:///system create "$t/naive/domain.xml" >/dev/null; wait_agent "naive-bench-$$"
for i in $(seq 1 "$runs"); do
  a=$(ms)
  virsh -q -c qemu:///system destroy "naive-bench-$$" >/dev/null
  rm -f "$t/naive/overlay.qcow2"; qemu-img create -q -f qcow2 -F qcow2 -b "$base" "$t/naive/overlay.qcow2"
  virsh -q -c qemu:///system create "$t/naive/domain.xml" >/dev/null
  wait_agent "naive-bench-$$"
  b=$(ms)
  naive+=($((b - a)))
done

p=$(printf '%s\n' "${prov[@]}" | median) e=$(printf '%s\n' "${execs[@]}" | median)
r=$(printf '%s\n' "${resets[@]}" | median) n=$(printf '%s\n' "${naive[@]}" | median)
echo "provision-to-ready: ${prov[*]} ms (median $p)"
echo "exec of true through seatctl+seatd: median $e ms over ${#execs[@]} runs (includes starting seatctl)"
echo "reset (seatctl reset until READY): ${resets[*]} ms (median $r)"
echo "naive reset (virsh destroy, new overlay, virsh create, agent hello): ${naive[*]} ms (median $n)"
echo "ratio reset/naive: $(awk "BEGIN { printf \"%.2f\", $r / $n }")"
echo "lifecycle: provision_p50_ms=$p exec_p50_ms=$e reset_p50_ms=$r naive_reset_p50_ms=$n"
