#!/usr/bin/env bash
# tests/bench/qga: seatd's agent against its peer, Debian's qemu-guest-agent, in the same
# run and the same guest. One libvirt domain (TCG) of images/recipes/qga-bench (Debian 12,
# systemd, qemu-guest-agent from Debian's archive, and guest-init --agent as in every
# recipe image) with both channels: org.qemu.guest_agent.0 (libvirt's agent) and
# org.seatd.agent.0. Then:
#   qga    bench-qga: libvirt's agent API on one connection, guest-exec + guest-exec-status
#          polled until exited, back to back and every 2, 5, 10, 20 ms (on one TCG vCPU
#          back-to-back polls slow the command down): /bin/true p50 (30 runs), 1 MiB of
#          output (head -c 1048576 /dev/zero, capture-output) median of 5, guest-ping p50;
#          the ratios take the peer's best polling interval for each figure
#   agent  bench-agent over the same guest's seatd channel (SEATD_BENCH_AGENT_SOCKET): exec
#          true p50 (60 runs), 1 MiB of output median of 5, ping p50
# and the ratios (agent / qga: below 1, seatd's agent is faster). Medians; asserts nothing
# about time.
#   usage: bench-qga.sh BUILD_DIR
# The image comes from seat-image's cache (SEAT_IMAGE_CACHE, default /var/cache/seatd-images):
# a fresh machine builds it first (about a minute, mmdebstrap from the apt sources).
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR}"
need_built "$GUEST_INIT" "$build/tests/bench/bench-qga" "$build/tests/bench/bench-agent" "$build/guest-init/guest-init-host"
need_root
need_cmd -h "apt-get install mmdebstrap e2fsprogs qemu-utils libvirt-clients" mmdebstrap mke2fs qemu-img virsh python3
need_kernel
[[ -z ${SEATD_FRESH_ROOT-} ]] || skip_all "the fresh root has no network for mmdebstrap to fetch Debian packages"
need_libvirt --start
harness_workdir /var/tmp/seatd-bench-qga 0755
V=("${VIRSH[@]}")
dom=seatd-bench-qga-$$
harness_on_exit '"${V[@]}" destroy "$dom" >/dev/null 2>&1; "${V[@]}" undefine "$dom" >/dev/null 2>&1'

# The image (seat-image lifts the test guard around mmdebstrap's downloads, as host.sh does).
"$HARNESS_SRC/images/seat-image" build "$HARNESS_SRC/images/recipes/qga-bench" --out "$t/img" \
	--cache "${SEAT_IMAGE_CACHE:-/var/cache/seatd-images}" --guest-init "$GUEST_INIT" \
	--tools "$build/images:$build/signing" --quiet >"$t/out" 2>&1 || { cat "$t/out" >&2; bail "seat-image build qga-bench failed"; }
echo "image: qga-bench, $(grep '^qemu-guest-agent ' "$t/img/packages.txt" | cut -d' ' -f1-2)"

# The domain: the test image's domain XML with the image's settings, an overlay, and
# libvirt's agent channel beside seatd's.
img() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$t/img/image.json" "$1"; }
qemu-img create -q -f qcow2 -F qcow2 -b "$t/img/root.qcow2" "$t/overlay.qcow2"
sed -e "s|@NAME@|$dom|" -e "s|@MEMORY_MIB@|$(img memory_mib)|" -e "s|@KERNEL@|$t/img/vmlinux|" \
	-e "s|@INITRD@|$t/img/initramfs.img|" -e "s|@CMDLINE@|$(img cmdline)|" -e "s|@DISK@|$t/overlay.qcow2|" \
	-e "s|@CONSOLE_LOG@|$t/console.log|" \
	-e "s|<target type='virtio' name='org.seatd.agent.0'/>|&\n    </channel>\n    <channel type='unix'>\n      <source mode='bind'/>\n      <target type='virtio' name='org.qemu.guest_agent.0'/>|" \
	"$HARNESS_SRC/images/recipes/test-domain.xml.in" >"$t/domain.xml"
a=$(ms)
"${V[@]}" create "$t/domain.xml" >"$t/out" 2>&1 || { cat "$t/out" >&2; bail "virsh create failed"; }

# Both agents up (bench-qga waits for guest-ping itself), then the rest of the boot
# settled: systemctl is-system-running --wait, through qemu-guest-agent as virsh users do.
wait_agent "$dom" || { tail -n 30 "$t/console.log" >&2; bail "seatd's agent in $dom did not answer hello"; }
echo "boot: seatd's agent answered hello $(($(ms) - a)) ms after virsh create (TCG, systemd)"
qga() { "${V[@]}" qemu-agent-command "$dom" "$1" 2>"$t/out"; }
for _ in $(seq 1 600); do qga '{"execute":"guest-ping"}' >/dev/null && break; sleep 0.2; done
pid=$(qga '{"execute":"guest-exec","arguments":{"path":"/bin/systemctl","arg":["is-system-running","--wait"],"capture-output":true}}' |
	json_field 'd["return"]["pid"]') || { cat "$t/out" >&2; bail "guest-exec through qemu-guest-agent failed"; }
for _ in $(seq 1 600); do
	st=$(qga "{\"execute\":\"guest-exec-status\",\"arguments\":{\"pid\":$pid}}") || break
	[[ $st == *'"exited":true'* ]] && break
	sleep 0.2
done
echo "boot: settled $(($(ms) - a)) ms after virsh create (system state: $(json_field 'd["return"].get("out-data", "")' <<<"$st" | base64 -d 2>/dev/null | tr -d '\n'))"

sock=$("${V[@]}" dumpxml "$dom" | python3 -c 'import re,sys; print(re.search(r"<source mode=.bind. path=.([^\x27]+org\.seatd\.agent\.0)", sys.stdin.read()).group(1))')
for p in 0 2 5 10 20; do
	"$build/tests/bench/bench-qga" "$dom" "$p" | tee "$t/qga-$p.out" || bail "bench-qga failed"
done
SEATD_BENCH_AGENT_SOCKET=$sock SEATD_GUEST_INIT_HOST=$build/guest-init/guest-init-host \
	"$build/tests/bench/bench-agent" | tee "$t/agent.out" || bail "bench-agent failed"

# key=value of the summary lines: field PREFIX KEY FILE... (the smallest, over the files)
field() { local pre=$1 key=$2; shift 2; sed -n "s/^$pre: .*\<$key=\([0-9.]*\).*/\1/p" "$@" | sort -g | head -n1; }
q_true=$(field qga-run exec_true_p50_us "$t"/qga-*.out) q_mib=$(field qga-run one_mib_ms "$t"/qga-*.out)
q_ping=$(field qga-run ping_p50_us "$t"/qga-*.out)
s_true=$(field agent rtt_p50_us "$t/agent.out") s_mib=$(field agent one_mib_ms "$t/agent.out")
s_ping=$(field agent ping_p50_us "$t/agent.out")
[[ -n $q_true && -n $q_mib && -n $q_ping && -n $s_true && -n $s_mib && -n $s_ping ]] ||
	bail "a summary line is missing (qga '$q_true' '$q_mib' '$q_ping', agent '$s_true' '$s_mib' '$s_ping')"
awk -v qt="$q_true" -v qm="$q_mib" -v qp="$q_ping" -v st="$s_true" -v sm="$s_mib" -v sp="$s_ping" 'BEGIN {
	printf "qga: exec_true_p50_us=%d one_mib_ms=%d ping_p50_us=%d agent_rtt_p50_us=%d agent_one_mib_ms=%d agent_ping_p50_us=%d", qt, qm, qp, st, sm, sp
	printf " agent_rtt_over_qga=%.3f agent_1mib_over_qga=%.3f agent_ping_over_qga=%.3f\n", st / qt, (qm > 0 ? sm / qm : 0), sp / qp }'
