#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# guest-probe in a real guest: the test image built with --guest-tool guest-probe boots
# (libvirt, TCG here) and the static probe runs under busybox with nothing from /etc. One
# boot through seat-run; the guest has no network interface, so the probes use loopback:
# the scan must account for all 65535 ports (refused or open, none silent), ICMP takes the
# raw-socket path (ping sockets are off by default), failures and usage errors give their
# exit codes. Speaks TAP.
#
# usage: guest-probe-vm.sh SEAT_RUN GUEST_INIT GUEST_PROBE
set -u

SEAT_RUN=${1:?usage: guest-probe-vm.sh SEAT_RUN GUEST_INIT GUEST_PROBE}
GUEST_INIT=${2:?usage: guest-probe-vm.sh SEAT_RUN GUEST_INIT GUEST_PROBE}
GP=${3:?usage: guest-probe-vm.sh SEAT_RUN GUEST_INIT GUEST_PROBE}
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"

need_root
need_built "$SEAT_RUN" "$GUEST_INIT" "$GP"
need_libvirt

# Under /var/tmp with 0755 parents: QEMU runs as libvirt-qemu and must read the image.
harness_workdir /var/tmp/seatd-probe-vm 0755

if "$RECIPE" --guest-init "$GUEST_INIT" --out "$t/bad" --quiet --guest-tool "$(command -v ls)" >"$t/out" 2>&1; then
        not_ok "the recipe refuses a dynamically linked --guest-tool"
else
        ok "the recipe refuses a dynamically linked --guest-tool ($(tail -n1 "$t/out"))"
fi
test_image "$t/img" --guest-tool "$GP" >"$t/out" 2>&1 ||
        bail "cannot build the test image: $(tail -n 3 "$t/out" | tr '\n' ' ')"
ok "test image built with --guest-tool $GP"

# Everything in one boot; each step's output is framed by markers with its exit code. The
# scan gives each port up to 60 s to answer (on loopback every port answers, at once when
# the guest's vCPU runs: its default 250 ms left 1377 ports "silent" on a loaded host, a
# TCG vCPU starved for longer than that); the boot and the steps have 10 minutes, a bound
# on a hang only.
cat >"$t/steps.sh" <<'STEPS'
step() { local name=$1; shift; echo "@@begin $name"; "$@"; echo "@@end $name rc=$?"; }
ip link set lo up
step which which guest-probe
step help guest-probe --help
step usage guest-probe tcp 127.0.0.1
step scan guest-probe --timeout-ms 60000 scan 127.0.0.1 1-65535
step icmp guest-probe icmp 127.0.0.1
step refused guest-probe tcp 127.0.0.1 1
step dns guest-probe --timeout-ms 500 dns 127.0.0.1 allowed.test
step name guest-probe tcp allowed.test 80
STEPS
"$SEAT_RUN" --image "$t/img" --timeout-ms 600000 -- sh -c "$(cat "$t/steps.sh")" >"$t/guest.out" 2>"$t/guest.err"
rc=$?
if [[ $rc != 0 ]]; then
        not_ok "boot and run the steps in the guest (seat-run exit $rc): $(tail -n 3 "$t/guest.err" | tr '\n' ' ')"
        tap_end
fi
ok "booted: $(grep -o 'ready in [0-9]* ms' "$t/guest.err" | head -n1)"

# out NAME: the step's output; rc NAME: its exit code
out() { sed -n "/^@@begin $1\$/,/^@@end $1 /{/^@@/d;p}" "$t/guest.out"; }
rc() { sed -n "s/^@@end $1 rc=//p" "$t/guest.out"; }
check_step() { # check_step NAME RC PATTERN DESCRIPTION
        local got_rc got
        got_rc=$(rc "$1") got=$(out "$1")
        if [[ $got_rc == "$2" ]] && grep -qE -- "$3" <<<"$got"; then ok "$4"; else
                not_ok "$4 (rc=$got_rc: $(head -c 300 <<<"$got"))"; fi
}

check_step which 0 '^(/usr)?/bin/guest-probe$' "guest-probe is on the guest's PATH (/bin)"
check_step help 0 '^usage: guest-probe ' "guest-probe --help runs in the guest (static, no /etc needed)"
check_step usage 2 'result=fail reason=usage' "a usage error exits 2 with reason=usage"
check_step scan 0 'result=ok .* silent=0 errors=0' "scan of all 65535 loopback ports: every port answered, none silent"
scan=$(out scan)
open=$(sed -n 's/.* open=\([0-9]*\) .*/\1/p' <<<"$scan") refused=$(sed -n 's/.* refused=\([0-9]*\) .*/\1/p' <<<"$scan")
if [[ -n $open && -n $refused && $((open + refused)) == 65535 ]]; then ok "scan counted open+refused = 65535"; else
        not_ok "scan counted open+refused = 65535: $scan"; fi
diag "scan under TCG: $scan"
check_step icmp 0 'result=ok reason=echo-reply socket=raw' "ICMP echo via a raw socket (ping sockets are off)"
check_step refused 1 'result=fail reason=refused' "a refused TCP connect exits 1 with reason=refused"
check_step dns 1 'result=fail reason=refused' "DNS to a port with no server fails (exit 1, reason=refused)"
check_step name 2 'reason=usage' "a name without --resolver is a usage error (no /etc/resolv.conf is read)"

tap_end
