#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The harness's cleanup runs in the script only. bash resets a background job's traps a
# little after its fork, so a job killed with SIGTERM at once ran the script's 'exit 130'
# trap and then its EXIT trap, harness_cleanup: seatd killed and the work directory removed
# under the running suite (CI's evidence-vm, once its throttler was killed). Here: many
# jobs killed at once and soon after their start, and the work directory must still be
# there; then the script's own exit removes it.
# shellcheck source=seatd-harness.sh
. "$(dirname "$0")/seatd-harness.sh"
harness_workdir /tmp/seatd-harness-trap
echo keep >"$t/marker"
job() { while :; do sleep 0.05; done; }
# (a job killed that early says "wait_for: No record of process" on stderr: not shown)
for i in $(seq 1 300); do
  job & p=$!
  ((i % 3)) && sleep 0.00$((i % 9))
  kill "$p" 2>/dev/null; wait "$p" 2>/dev/null
done 2>/dev/null
[[ -f $t/marker ]] && ok "300 background jobs killed just after their start: the work directory is still there" \
  || not_ok "a killed background job ran the harness's cleanup (the work directory is gone)"
# And the script's own exit still cleans up: a child run of the same harness exits, and
# its work directory is gone.
out=$(bash -c '. "$1"; harness_workdir /tmp/seatd-harness-trap-child; echo "$t"' _ "$(dirname "$0")/seatd-harness.sh")
[[ -n $out && ! -e $out ]] && ok "the script's own exit removes its work directory" || not_ok "the script's own exit removes its work directory ($out)"
# A seatd that dies of a signal at its stop (an ASan report, an abort) fails the suite even
# when every TAP line was ok; the TERM it was sent does not. A stand-in "seatd" (bash that
# aborts on SIGTERM, or exits on it) in a child run of the harness, stopped once its trap
# is set (it says so: a TERM before that was a plain exit, not the crash to be seen).
crash_run() { # TRAP_COMMAND -> the child's exit status
  bash -c '. "$1"; harness_workdir /tmp/seatd-harness-crash
    bash -c "trap \"$2\" TERM; : >\"$t/trapped\"; while :; do sleep 0.05; done" & seatd_pid=$!
    wait_until "[[ -e \$t/trapped ]]"; ok "a stand-in seatd runs"; tap_end' _ "$(dirname "$0")/seatd-harness.sh" "$1" >/dev/null 2>&1
  echo $?
}
st=$(crash_run 'kill -ABRT \$\$')
[[ $st != 0 ]] && ok "a seatd that aborts at its stop fails the suite (exit $st)" || not_ok "a seatd that aborts at its stop fails the suite (exit $st)"
st=$(crash_run 'exit 0')
[[ $st == 0 ]] && ok "a seatd that exits on its TERM does not (exit $st)" || not_ok "a seatd that exits on its TERM does not (exit $st)"
# wait_until: true once the awaited event has come (a job makes it a moment later); false,
# and not stuck, when it never comes within its bound.
( sleep 0.5; : >"$t/event" ) &
wait_until '[[ -e $t/event ]]' && [[ -e $t/event ]] && ok "wait_until returns once the awaited event has come" ||
  not_ok "wait_until returns once the awaited event has come"
s0=$SECONDS
if wait_until -t 1 false; then not_ok "wait_until -t 1 on an event that never comes fails"
else (( SECONDS - s0 < 30 )) && ok "wait_until -t 1 on an event that never comes fails after its bound ($((SECONDS - s0)) s)" ||
  not_ok "wait_until -t 1 gives up after its bound (after $((SECONDS - s0)) s)"; fi
tap_end
