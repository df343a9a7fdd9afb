#!/usr/bin/env bash
# pty.sh: interactive seats (issue 15, first slice) against a private seatd and real VMs.
# Speaks TAP.
#   - seatctl shell and exec -it on a real pseudo-terminal (pty-drive.py): the guest side is
#     a /dev/pts terminal of the local size, a resize follows, typed input reaches a read,
#     Ctrl-C kills the foreground command, the exit status comes back, and the local
#     terminal's mode is restored after exit, "~." and kill -TERM of seatctl (the command
#     is then killed in the guest);
#   - exec -i streams stdin of several MiB through the agent's flow control, intact;
#   - a participant reaches it with the seat's token on the participant socket;
#   - an agent that does not say "pty" in its hello (the hostile agent's hello lists "exec"
#     only: an older guest-init) is refused a terminal, clearly, naming image and agent.
#   usage: pty.sh BUILD_DIR [HOSTILE_AGENT]
set -uo pipefail
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR [HOSTILE_AGENT]}"
hostile=${2-}
drive=$HARNESS_SRC/tests/terminal/pty-drive.py
need_built "$SEATD" "$CTL" "$SIGN" "$MANIFEST" "$GUEST_INIT"
need_root
need_cmd python3 sha256sum
need_libvirt
need_kernel
harness_workdir /var/tmp/seatd-pty 0755
harness_keep_log "$build/meson-logs/pty-seatd.log"
rm -f "$build/meson-logs/pty-transcript.log"
harness_seatd_must_live=1 harness_not_ok_log=20
unset SEATD_TOKEN

# Sessions are sealed (terminal recordings are evidence); typed input recorded too, and a
# small cap so that a flood shows the truncation.
seatd_start_sealing record_input=true recording_max_bytes=1048576

# drive SCENARIO SEATCTL-ARGS...: the scenario's checks as TAP lines.
drive() {
        pass_fail_tap < <(PTY_TRANSCRIPT=$build/meson-logs/pty-transcript.log python3 "$drive" "$1" -- "${@:2}" 2>&1)
}
# sleepers SEAT: how many 'sleep 300' run in the seat's guest.
sleepers() { "$CTL" exec "$1" -- sh -c 'ps | grep -c "[s]leep 300"' 2>/dev/null; }
# no_sleepers SEAT: until none is left (the cancellation kills the group; a minute at most).
no_sleepers() {
        for _ in $(seq 1 120); do [[ $(sleepers "$1") == 0 ]] && return 0; sleep 0.5; done
        return 1
}

"$CTL" -q --json provision --image test-image >"$t/prov.json" || bail "provision failed"
seat=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seats"][0]["id"])' "$t/prov.json")
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seats"][0]["token"])' "$t/prov.json")
[[ -n $seat && -n $token ]] || bail "no seat"
token_file "$t/token" "$token"

# A participant's shell, through the participant socket.
drive session "$CTL" --token-file "$t/token" shell "$seat"
drive status "$CTL" exec -t "$seat" -- sh -c 'echo T-$(tty)-T; exit 3'

drive sigterm "$CTL" exec -it "$seat" -- sleep 300
if no_sleepers "$seat"; then ok "after kill -TERM of seatctl the command is killed in the guest"
else not_ok "after kill -TERM of seatctl the command is killed in the guest ($(sleepers "$seat") left)"; fi
drive detach "$CTL" --token-file "$t/token" exec -it "$seat" -- sleep 300
if no_sleepers "$seat"; then ok "after '~.' the command is killed in the guest"
else not_ok "after '~.' the command is killed in the guest ($(sleepers "$seat") left)"; fi

# Live stdin without a terminal: more than the agent's 1 MiB of pending stdin, so it only
# gets through by flow control (an ok per chunk once the tool has read it), not by buffering.
head -c $((4 * 1024 * 1024)) /dev/urandom >"$t/blob"
want=$(sha256sum <"$t/blob" | cut -d' ' -f1)
got=$("$CTL" exec -i "$seat" -- sh -c 'sleep 2; sha256sum' <"$t/blob" 2>"$t/out" | cut -d' ' -f1)
check "exec -i streams 4 MiB of stdin to a command that reads it late, intact" '[[ $got == "$want" ]]'
"$CTL" exec -i "$seat" -- cat <<<"hello" >"$t/out" 2>&1
check "exec -i delivers the end of stdin (cat ends)" '[[ $(cat "$t/out") == hello ]]'

# Follow-ups reach only execs of their own connection.
python3 - "$SEATD_SOCKET" >"$t/out" 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rwb")
def call(i, method, params):
    f.write((json.dumps({"id": i, "method": method, "params": params}) + "\n").encode()); f.flush()
    return json.loads(f.readline())
call(1, "hello", {"version": 1})
r = call(2, "seat.exec.stdin", {"exec": 1, "data": ""})
print(r["type"], r.get("error", {}).get("code"))
PY
check "seat.exec.stdin for no running exec of this connection is not_found" 'grep -q "^error not_found" "$t/out"'

if [[ -n $hostile && -x $hostile ]]; then
        "$RECIPE" --guest-init "$hostile" --out "$t/old" --name old-agent --quiet --sign-key "$t/test.key" \
                --tools "$build/images:$build/signing" >"$t/out" 2>&1 &&
                "$CTL" -q image import "$t/old/manifest.json" >"$t/out" 2>&1 || bail "cannot build or import the old-agent image"
        old=$(provision_id --image old-agent) || bail "provision of old-agent failed"
        "$CTL" exec -it "$old" -- /bin/sh </dev/null >"$t/out" 2>&1
        rc=$?
        check "a terminal on an agent without 'pty' is refused (seatctl exits 125)" '[[ $rc == 125 ]]'
        check "the refusal names the image and the agent" \
                'grep -q "old-agent" "$t/out" && grep -q "hostile-agent" "$t/out" && grep -q "no terminal support" "$t/out"'
        "$CTL" release "$old" >/dev/null 2>&1
else
        skip "a terminal on an agent without 'pty' is refused" "no hostile agent built (static json-c missing)"
fi

# A terminal that prints more than recording_max_bytes (1 MiB): its recording is cut.
"$CTL" exec -t "$seat" -- sh -c 'head -c 3000000 /dev/zero | tr "\0" x; echo; echo FLOOD-END' >"$t/flood" 2>&1
check "a terminal flood of 3 MB reaches the client whole" 'grep -q FLOOD-END "$t/flood" && (( $(wc -c <"$t/flood") > 3000000 ))'

# ---------------------------------------------------------------- recorded sessions
# Every terminal of the session is sealed into its archive as an asciicast v2 file that a
# real player reads.
"$CTL" release "$seat" >/dev/null 2>&1
arch=
for _ in $(seq 1 1800); do arch=$(ls "$t/state/evidence/archives/$seat-g1-"*.seatdev 2>/dev/null | head -1); [[ -n $arch ]] && break; sleep 0.1; done
"$CTL" evidence open "$arch" --key "$t/facilitator.key" --out "$t/open" --host-key "$t/state/trust/host.pub" >"$t/out" 2>&1
rc=$?
check "the session's archive opens" '[[ -n $arch && $rc == 0 ]]'
ls "$t/open" >"$t/out" 2>&1
nrec=$(ls "$t/open"/*rec-*.cast 2>/dev/null | wc -l)
check "each terminal of the session was recorded ($nrec recordings: shell, exec -t, two exec -it ended by the client, the flood)" '(( nrec == 5 ))'
shell_rec=$(ls "$t/open"/*rec-1.cast 2>/dev/null)
if command -v asciinema >/dev/null; then
        # (asciinema opens /dev/tty: script(1) gives it a terminal)
        script -qefc "asciinema cat '$shell_rec'" /dev/null >"$t/cat" 2>"$t/out" </dev/null; rc=$?
        tail -c 600 "$t/cat" >>"$t/out"
        check "asciinema cat reads the shell's recording and shows what was typed and printed" \
                '[[ $rc == 0 ]] && grep -q "R-typed-input-R" "$t/cat" && grep -q "M1-/dev/pts/" "$t/cat"'
else
        not_ok "asciinema cat reads the shell's recording (asciinema is not installed: scripts/lib/host.sh installs it)"
fi
python3 - "$shell_rec" >"$t/out" 2>&1 <<'PY'
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
head = json.loads(lines[0])
ev = [json.loads(l) for l in lines[1:]]
assert head["version"] == 2 and head["width"] > 0 and head["height"] > 0, head
assert any(e[1] == "i" and "typed-input" in e[2] for e in ev), "no input event with the typed line"
assert any(e[1] == "r" and e[2] == "120x40" for e in ev), "no resize event 120x40"
assert all(b[0] >= a[0] for a, b in zip(ev, ev[1:])), "time goes back"
PY
rc=$?
check "the recording holds the typed input (record_input), the resize and ordered times" '[[ $rc == 0 ]]'
"$CTL" --json evidence verify "$arch" --host-key "$t/state/trust/host.pub" >"$t/verify.json" 2>"$t/out"
python3 - "$t/verify.json" "$t/open" >"$t/out" 2>&1 <<'PY'
import json, os, sys
def members(o):
    if isinstance(o, dict):
        if o.get("role") == "recording":
            yield o
        for v in o.values():
            yield from members(v)
    elif isinstance(o, list):
        for v in o:
            yield from members(v)
recs = list(members(json.load(open(sys.argv[1]))))
assert len(recs) == 5, recs
cut = [m for m in recs if m["truncated"]]
assert len(cut) == 1 and cut[0]["size"] <= 1048576 and cut[0]["original_size"] > 2000000, cut
name = [f for f in os.listdir(sys.argv[2]) if f.endswith(cut[0]["name"].split("-", 1)[1])]
last = json.loads(open(os.path.join(sys.argv[2], name[0]), encoding="utf-8").read().splitlines()[-1])
assert last[1] == "m" and "recording truncated" in last[2], last
PY
rc=$?
check "the flood's recording stops at recording_max_bytes, says so, and the signed manifest marks it truncated" '[[ $rc == 0 ]]'
tap_end
