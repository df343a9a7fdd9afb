#!/usr/bin/env bash
# concurrent.sh: many calls on one seat at once (issue 15 #3 and #7), against a private
# seatd and a real TCG seat, driven the way people drive terminals: `seatctl shell` in
# tmux windows, keys sent with send-keys, the screen read with capture-pane. Speaks TAP.
#   - one shell: the prompt, `stty size` before and after a resize of the window, Ctrl-C
#     interrupting a `sleep`, a full-screen program (busybox vi) drawn, edited and quit,
#     and the exit status;
#   - four shells at once while a fifth exec floods 100 MiB of output: each still echoes;
#   - a slow exec does not hold up a quick one; stdin of 50 MiB through `exec -i`, its
#     digest taken in the guest;
#   - seat_max_calls refuses one call too many, clearly; a reset cancels every call.
# Waits have generous deadlines (TCG guests are slow); nothing here asserts a duration.
#   usage: concurrent.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite concurrent
need_cmd tmux python3 sha256sum
need_libvirt
need_kernel
harness_seatd_must_live=1 harness_not_ok_log=20
unset SEATD_TOKEN

seatd_start_sealing seat_max_calls=8
"$CTL" -q --json provision --image test-image >"$t/prov.json" || bail "provision failed"
seat=$(json_field 'd["seats"][0]["id"]' <"$t/prov.json")
token=$(json_field 'd["seats"][0]["token"]' <"$t/prov.json")
[[ -n $seat && -n $token ]] || bail "no seat"
token_file "$t/token" "$token"

# tmux on a server of its own; its windows run seatctl as a participant would.
tm() { tmux -S "$t/tmux.sock" "$@"; }
harness_on_exit 'tmux -S "$t/tmux.sock" kill-server 2>/dev/null'
shell_cmd="env SEATD_SOCKET=$SEATD_SOCKET $CTL --token-file $t/token shell $seat; echo SHELL-EXIT-\$?; sleep 3600"
# pane_has WINDOW REGEX: until the window shows it (3 minutes at most).
pane_has() {
        for _ in $(seq 1 1800); do
                grep -Eq -- "$2" <<<"$(tm capture-pane -p -t "$1" 2>/dev/null)" && return 0
                sleep 0.1
        done
        return 1
}
# keys WINDOW TEXT: type TEXT and Enter.
keys() { tm send-keys -t "$1" -l -- "$2" && tm send-keys -t "$1" Enter; }
dump_pane() { tm capture-pane -p -t "$1" 2>/dev/null | sed '/^$/d' | tail -n 15 | sed 's/^/#   /'; }
# pane_size WINDOW: the size of the window's terminal ("ROWS COLS"), as seatctl reads it.
pane_size() { stty -F "$(tm display -p -t "$1" '#{pane_tty}')" size 2>/dev/null; }
# in_guest ARGS: whether a process with exactly these arguments runs in the seat (ps).
in_guest() { grep -qxF -- "$*" <<<"$("$CTL" exec "$seat" -- ps -o args 2>/dev/null)"; }
# started ARG...: how many exec.start records of the seat's current audit log have this argv.
started() {
        python3 - "$(ls -t "$t/state/seats/$seat"/audit-g*.log 2>/dev/null | head -1)" "$@" <<'PY'
import json, sys
n = 0
try:
    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue  # (a line being written)
        if r.get("type") == "exec.start" and r.get("data", r).get("argv") == sys.argv[2:]:
            n += 1
except OSError:
    pass
print(n)
PY
}

# ---------------------------------------------------------------- one shell
tm new-session -d -s seat -n w1 -x 100 -y 30 "$shell_cmd" || bail "tmux cannot start"
keys w1 'echo READY-$((6 * 7))'
check "the shell answers typed commands (tmux send-keys, capture-pane)" 'pane_has w1 "^READY-42"'
keys w1 'echo SIZE1-$(stty size | tr " " x)'
check "stty size is the window's (30 rows, 100 columns)" 'pane_has w1 "^SIZE1-30x100"'
tm resize-window -t w1 -x 120 -y 40
# tmux gives the pane's terminal its new size a moment later (SIGWINCH to seatctl then,
# which sends the resize before any key typed after it): asked once it has it.
wait_until '[[ $(pane_size w1) == "40 120" ]]'
keys w1 'echo SIZE2-$(stty size | tr " " x)'
check "after the window is resized, stty size follows (40x120)" 'pane_has w1 "^SIZE2-40x120"' || dump_pane w1
keys w1 'sleep 300; echo AFTER-$((40 + 2))'
wait_until 'in_guest sleep 300' # (the shell runs it: the Ctrl-C is not taken by its line editor)
tm send-keys -t w1 C-c
keys w1 'echo INTR-$((1 + 1))'
check "Ctrl-C interrupts the sleep (the shell is back)" 'pane_has w1 "^INTR-2"' || dump_pane w1
check "... and the command after the interrupted sleep did not run" '! grep -q "^AFTER-42" <<<"$(tm capture-pane -p -t w1)"'
keys w1 'vi /tmp/vi-test'
# busybox vi fills the rows below the text with '~' and shows the file's name.
check "vi draws its full screen" 'pane_has w1 "^~" && (( $(tm capture-pane -p -t w1 | grep -c "^~") > 20 ))' || dump_pane w1
tm send-keys -t w1 i && tm send-keys -t w1 -l 'HELLO-FROM-VI' && tm send-keys -t w1 Escape
# vi reads an Escape followed at once by more keys as the start of a key's escape
# sequence: the command comes once it has taken the Escape alone (its status line, back in
# command mode, says "- FILE [Modified]").
pane_has w1 '^- /tmp/vi-test \[Modified\]' || dump_pane w1
tm send-keys -t w1 -l ':wq' && tm send-keys -t w1 Enter
keys w1 'echo VI-$(cat /tmp/vi-test)'
check "vi wrote what was typed and quit" 'pane_has w1 "^VI-HELLO-FROM-VI"' || dump_pane w1
keys w1 'exit 7'
check "the shell's exit status comes back to seatctl (7)" 'pane_has w1 "^SHELL-EXIT-7"' || dump_pane w1

# ---------------------------------------------------------------- four shells and a flood
for i in 1 2 3 4; do tm new-window -d -t seat -n "s$i" "$shell_cmd"; done
tm kill-window -t w1 2>/dev/null # (after the others: the session ends with its last window)
for i in 1 2 3 4; do keys "s$i" "echo UP-$i-\$((100 + $i))"; done
up=0
for i in 1 2 3 4; do pane_has "s$i" "^UP-$i-10$i" && up=$((up + 1)); done
check "four shells run on one seat at once" '[[ $up == 4 ]]'

# The flood: 100 MiB of output through the agent channel; a counter says how far it got.
cat >"$t/count.py" <<'PY'
import sys
n = 0
with open(sys.argv[1], "w", buffering=1) as log:
    while True:
        b = sys.stdin.buffer.read(1 << 20)
        if not b:
            break
        n += len(b)
        log.write("%d\n" % n)
    log.write("done %d\n" % n)
PY
"$CTL" exec --max-output 101M "$seat" -- head -c 104857600 /dev/zero 2>"$t/flood.err" |
        python3 "$t/count.py" "$t/flood.count" &
flood=$!
for _ in $(seq 1 1800); do [[ -s $t/flood.count ]] && break; sleep 0.1; done
check "the flood streams" '[[ -s $t/flood.count ]]'
echoed=0 during=0
for round in 1 2 3; do
        for i in 1 2 3 4; do keys "s$i" "echo K$round-$i-\$((1000 * $round + $i))"; done
        for i in 1 2 3 4; do
                if pane_has "s$i" "^K$round-$i-$((1000 * round + i))"; then
                        echoed=$((echoed + 1))
                        grep -q '^done' "$t/flood.count" || during=$((during + 1))
                fi
        done
done
diag "keystroke lines echoed: $echoed of 12, $during of them while the flood still ran"
check "every shell echoes typed lines while another exec floods (12 of 12)" '[[ $echoed == 12 ]]'
check "... and they were echoed during the flood, not after it" '(( during > 0 ))'
wait "$flood"
check "the flood arrived whole: 100 MiB" 'grep -qx "done 104857600" "$t/flood.count"' || diag_file "$t/flood.err"
for i in 1 2 3 4; do keys "s$i" 'exit 0'; done
ended=0
for i in 1 2 3 4; do pane_has "s$i" "^SHELL-EXIT-0" && ended=$((ended + 1)); done
check "the four shells end with status 0" '[[ $ended == 4 ]]'

# ---------------------------------------------------------------- side by side
# The slow one runs until the quick one has ended and it is let go (/tmp/slow-go; two
# minutes at most), however slow either is here: it says on stderr when it runs.
"$CTL" exec "$seat" -- sh -c 'echo RUNNING >&2; i=0; until [ -e /tmp/slow-go ] || [ $i -ge 1200 ]; do sleep 0.1; i=$((i + 1)); done; echo SLOW' \
        >"$t/slow" 2>"$t/slow.err" &
slow=$!
wait_until 'grep -q RUNNING "$t/slow.err" || ! kill -0 "$slow" 2>/dev/null'
"$CTL" exec "$seat" -- echo QUICK >"$t/quick" 2>&1
quick_alone=no
kill -0 "$slow" 2>/dev/null && grep -q RUNNING "$t/slow.err" && quick_alone=yes
check "a quick exec ends while a slow one on the same seat still runs" '[[ $(cat "$t/quick") == QUICK && $quick_alone == yes ]]'
"$CTL" exec "$seat" -- touch /tmp/slow-go >"$t/out" 2>&1
wait "$slow"
check "... and the slow one ends as it should" '[[ $(cat "$t/slow") == SLOW ]]'

# 50 MiB of stdin, its digest taken in the guest.
head -c $((50 * 1024 * 1024)) /dev/urandom >"$t/blob"
want=$(sha256sum <"$t/blob" | cut -d' ' -f1)
got=$("$CTL" exec -i "$seat" -- sha256sum <"$t/blob" 2>"$t/out" | cut -d' ' -f1)
check "exec -i streams 50 MiB of stdin; the guest's sha256sum matches" '[[ $got == "$want" ]]' || diag_file "$t/out"
rm -f "$t/blob"

# ---------------------------------------------------------------- limits and reset
pids=()
for i in $(seq 1 8); do
        "$CTL" exec "$seat" -- sleep 600 >"$t/held-$i" 2>&1 &
        pids+=($!)
done
# Until the eight hold the seat: the ninth is refused then. The probe is a call too: it
# starts only once the eight are admitted (seatd records each one's exec.start in the
# audit log as it admits it), or it could take a slot one of them needs.
wait_until '(($(started sleep 600) >= 8))' || diag "$(started sleep 600) of the eight calls admitted after 120 s"
refused=no
for _ in $(seq 1 600); do
        "$CTL" exec "$seat" -- true >"$t/ninth" 2>&1
        if grep -q seat_max_calls "$t/ninth"; then refused=yes; break; fi
        sleep 0.2
done
check "one call over seat_max_calls (8) is refused, naming the key" '[[ $refused == yes ]]' || diag_file "$t/ninth"
check "... with a message that says what to do" 'grep -q "wait for one to end" "$t/ninth"'
"$CTL" -q reset "$seat" >"$t/reset" 2>&1
rc=$?
check "a reset with eight calls running completes" '[[ $rc == 0 ]]' || diag_file "$t/reset"
cancelled=0
for i in $(seq 1 8); do
        wait "${pids[$((i - 1))]}"
        grep -qi cancel "$t/held-$i" && cancelled=$((cancelled + 1))
done
check "the reset cancelled all eight, each told so" '[[ $cancelled == 8 ]]' || diag_file "$t/held-1"
tap_end
