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

seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false
seatd_start
image_import

# drive SCENARIO SEATCTL-ARGS...: the scenario's checks as TAP lines.
drive() {
        local line
        while IFS= read -r line; do
                case $line in
                PASS\ *) ok "${line#PASS }" ;;
                FAIL\ *) not_ok "${line#FAIL }" ;;
                *) diag "$line" ;;
                esac
        done < <(PTY_TRANSCRIPT=$build/meson-logs/pty-transcript.log python3 "$drive" "$1" -- "${@:2}" 2>&1)
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

"$CTL" release "$seat" >/dev/null 2>&1
tap_end
