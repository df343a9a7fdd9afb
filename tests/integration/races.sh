#!/usr/bin/env bash
# races.sh: seat.status and seat.console polled without pause while the seat is reset
# and released, against a private seatd and a real VM (issue 13, finding 9). Speaks TAP.
#   - every reset and the release succeed while two clients poll status and console;
#   - status and console keep answering during a reset (they never wait for the seat's
#     lock, which a reset holds for its whole boot), and status shows the reset;
#   - seatd survives it all, and its log holds no ThreadSanitizer report: scripts/test runs
#     this suite against a seatd built with -fsanitize=thread and TSAN_OPTIONS with
#     halt_on_error=1, so a data race between those readers and reset, release or a fault
#     (the seat's overlay, console log, domain and fault freed under them) kills seatd.
#   usage: races.sh BUILD_DIR
# Builds and signs its own test image; every domain and process it makes is removed on exit.
# Needs root and a running libvirtd (never restarted here).
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
RESETS=${SEATD_RACES_RESETS:-3}
harness_vm_suite races
need_cmd virsh qemu-img python3
need_libvirt

bg_pids=()
harness_on_exit 'touch "$t/stop"; kill_wait "${bg_pids[@]}"'
t_start=$(date +%s)

# What TSan (or anything else) said before seatd went away.
tsan_report() { grep -n -m1 -A40 'ThreadSanitizer' "$t/seatd.log" 2>/dev/null | sed 's/^/# /'; }
harness_on_bail tsan_report
seatd_alive() { kill -0 "$seatd_pid" 2>/dev/null; }

unset SEATD_TOKEN
# No networks, no warm states, no facilitator: every reset is one cold boot, the least
# this needs on a 2-core machine; the fields status reads change the same way.
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false
seatd_start
image_import
"$CTL" -q provision --image test-image --participant alice >"$t/prov" 2>"$t/out" || bail "provision failed"
S=$(awk 'NR==2 {print $1}' "$t/prov")
[[ $S =~ ^s[0-9a-f]{8}$ ]] || bail "no seat to test with"
ok "seat $S provisioned ($(($(date +%s) - t_start)) s)"

# poll VERB FILE: one line per call until $t/stop exists: "rc ms state" (state: what
# status said, "-" for console).
poll() {
  local verb=$1 file=$2 a rc out st
  while [[ ! -e $t/stop ]]; do
    a=$(ms)
    if [[ $verb == status ]]; then out=$("$CTL" --json status "$S" 2>&1); else out=$("$CTL" console "$S" 2>&1 >/dev/null); fi
    rc=$?
    st=-
    [[ $verb == status && $out =~ \"state\":\ *\"([a-z]+)\" ]] && st=${BASH_REMATCH[1]}
    echo "$rc $(($(ms) - a)) $st" >>"$file"
  done
}
: >"$t/status.log"; : >"$t/console.log"
poll status "$t/status.log" & bg_pids+=($!)
poll console "$t/console.log" & bg_pids+=($!)
poll status "$t/status2.log" & bg_pids+=($!)

for i in $(seq 1 "$RESETS"); do
  a=$(ms)
  if "$CTL" -q reset "$S" >"$t/out" 2>&1 && seatd_alive; then
    ok "reset $i of $RESETS while status and console are polled ($(($(ms) - a)) ms)"
  else
    seatd_alive || bail "seatd (pid $seatd_pid) died during reset $i"
    not_ok "reset $i of $RESETS while status and console are polled"
  fi
done
sleep 1
if "$CTL" -q release "$S" >"$t/out" 2>&1 && seatd_alive; then ok "release while status and console are polled"
else seatd_alive || bail "seatd (pid $seatd_pid) died during the release"; not_ok "release while status and console are polled"; fi
sleep 1
touch "$t/stop"
for p in "${bg_pids[@]}"; do wait "$p" 2>/dev/null; done
bg_pids=()

cat "$t/status2.log" >>"$t/status.log"
# What the pollers saw: answers, how slow the slowest was, and whether status showed a reset.
python3 - "$t/status.log" "$t/console.log" >"$t/summary" 2>&1 <<'PY'
import sys
for path, name in ((sys.argv[1], "status"), (sys.argv[2], "console")):
    rows = [l.split() for l in open(path) if len(l.split()) == 3]
    good = [int(r[1]) for r in rows if r[0] == "0"]
    states = sorted({r[2] for r in rows if r[0] == "0"})
    print(name, len(rows), len(good), max(good) if good else -1, ",".join(states))
PY
read -r _ st_calls st_good st_max st_states < <(grep '^status ' "$t/summary")
read -r _ co_calls co_good co_max _ < <(grep '^console ' "$t/summary")
echo "# status: $st_calls calls, $st_good answered, slowest ${st_max} ms, states seen: $st_states"
echo "# console: $co_calls calls, $co_good answered, slowest ${co_max} ms"
# A status that waited for the seat's lock would take a whole cold boot (several seconds
# under TCG); answered from what the seat published, it takes a client's round trip.
[[ $st_good -ge 20 && $st_max -lt 2500 ]] && ok "status answered $st_good times during the resets, none slower than 2.5 s ($st_max ms)" \
  || not_ok "status answered throughout the resets (answered $st_good, slowest $st_max ms)"
[[ $st_states == *resetting* ]] && ok "status showed the seat resetting while it was ($st_states)" \
  || not_ok "status showed the seat resetting while it was (saw: $st_states)"
[[ $co_good -ge 10 && $co_max -lt 2500 ]] && ok "console answered $co_good times during the resets, none slower than 2.5 s ($co_max ms)" \
  || not_ok "console answered throughout the resets (answered $co_good, slowest $co_max ms)"

seatd_alive && ok "seatd still serves" || bail "seatd (pid $seatd_pid) is gone"
if grep -q 'ThreadSanitizer' "$t/seatd.log"; then
  tsan_report; not_ok "no ThreadSanitizer report in seatd's log"
else
  if grep -q libtsan <<<"$(ldd "$SEATD" 2>/dev/null)"; then ok "no ThreadSanitizer report in seatd's log (TSAN_OPTIONS=${TSAN_OPTIONS:-})"
  else ok "no ThreadSanitizer report in seatd's log # SKIP this seatd is not built with -fsanitize=thread"; fi
fi

echo "1..$n"
echo "# $(($(date +%s) - t_start)) s"
((failed == 0))
