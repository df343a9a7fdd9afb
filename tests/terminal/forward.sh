#!/usr/bin/env bash
# forward.sh: seatctl forward (issue 15, port forwarding) against a private seatd and real
# TCG seats of the test image. Speaks TAP.
#   - servers inside the guest (busybox nc) on the guest's loopback, which the seat's
#     network cannot reach: the path is the agent channel;
#   - 1 MiB up with a half-close (the guest's sha256sum answers after the client's end),
#     1 MiB down, 1 MiB both ways at once, 8 connections open at once;
#   - a target that refuses: the local connection is closed and seatctl says why;
#   - another local user's connection (seatctl forward runs as daemon; nobody and root
#     connect) is closed without data and never reaches the guest (issue 35, finding 3);
#   - another seat's token is refused; the seat's audit log holds every connection (who,
#     target, bytes each way); an exec runs while the forward waits between connections;
#   - a reset ends the forward and its open connections;
#   - a guest-init without capability "tcp" (the hostile agent plays one) is refused clearly.
#   usage: forward.sh BUILD_DIR
set -uo pipefail
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
client=$HARNESS_SRC/tests/terminal/forward-client.py
hostile=$build/tests/security/hostile-agent
need_cmd python3 sha256sum
need_libvirt
need_kernel
harness_vm_suite forward
# (a copy the other users below can run: the source tree may sit in root's 0700 home, as
# in the fresh root)
cp "$client" "$t/forward-client.py" && chmod 0644 "$t/forward-client.py" && client=$t/forward-client.py
harness_seatd_must_live=1 harness_not_ok_log=30
unset SEATD_TOKEN

seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false forward_idle_timeout=20 \
        forward_max_connections=24
seatd_start
image_import

# scenario ARGS...: forward-client.py's PASS/FAIL lines as TAP.
scenario() { pass_fail_tap < <(timeout 600 python3 "$client" "$@" 2>&1); }
fwd_pids=()
fwd_as=() # a command that runs seatctl as another user (setpriv ... --): exec'ing, so $! is seatctl
harness_on_exit 'kill_wait "${fwd_pids[@]}"'
# forward NAME SEATCTL-ARGS...: seatctl forward in the background (stderr in $t/NAME.err);
# sets fport to the local port once it listens, fpid to its pid.
forward() {
        local name=$1
        shift
        "${fwd_as[@]}" "$CTL" "$@" 2>"$t/$name.err" &
        fpid=$!
        fwd_pids+=("$fpid")
        fport=
        for _ in $(seq 1 300); do
                fport=$(sed -n 's/^seatctl: forwarding [^ ]*:\([0-9]*\) to .*/\1/p' "$t/$name.err")
                [[ -n $fport ]] && return 0
                kill -0 "$fpid" 2>/dev/null || return 1
                sleep 0.1
        done
        return 1
}
# ended PID SECONDS: whether it exits within that time; its status in $rc.
ended() {
        for _ in $(seq 1 $((10 * $2))); do
                kill -0 "$1" 2>/dev/null || { wait "$1"; rc=$?; return 0; }
                sleep 0.1
        done
        return 1
}

"$CTL" -q --json provision --image test-image >"$t/prov.json" || bail "provision failed"
seat=$(json_field 'd["seats"][0]["id"]' <"$t/prov.json")
token=$(json_field 'd["seats"][0]["token"]' <"$t/prov.json")
[[ -n $seat && -n $token ]] || bail "no seat"
token_file "$t/token" "$token"
other=$("$CTL" -q --json provision --image test-image | json_field 'd["seats"][0]["token"]') || bail "second provision failed"
token_file "$t/other" "$other"

# The guest's servers, on its loopback, in sessions of their own (an exec's process group
# does not outlive it): sha256 of what comes, a 1 MiB file, an echo. The exec ends once
# the three listen (netstat in the guest; two minutes at most).
head -c $((1024 * 1024)) /dev/urandom >"$t/blob"
want=$(sha256sum <"$t/blob" | cut -d' ' -f1)
"$CTL" cp "$t/blob" "$seat:/tmp/blob" >"$t/out" 2>&1 || bail "cp into the seat failed"
"$CTL" exec "$seat" -- sh -c 'ip link set lo up &&
        setsid nc -ll -p 7000 -e sha256sum </dev/null >/dev/null 2>&1 &
        setsid nc -ll -p 7001 -e cat /tmp/blob </dev/null >/dev/null 2>&1 &
        setsid nc -ll -p 7002 -e cat </dev/null >/dev/null 2>&1 &
        i=0; until [ "$(netstat -ltn | grep -oE ":700[012] " | sort -u | wc -l)" -ge 3 ]; do
                [ $i -lt 1200 ] || { echo "not listening: $(netstat -ltn)"; exit 1; }; sleep 0.1; i=$((i + 1)); done' \
        >"$t/out" 2>&1 || bail "cannot start the guest's servers: $(cat "$t/out")"

# Participants, with the seat's token on the participant socket.
forward up --token-file "$t/token" forward "$seat" 0:127.0.0.1:7000 || bail "seatctl forward did not listen: $(cat "$t/up.err")"
scenario upload "$fport" "$t/blob"
forward down --token-file "$t/token" forward "$seat" 127.0.0.1:0:localhost:7001 || bail "seatctl forward did not listen"
got=$(timeout 300 python3 "$client" download "$fport" | sed -n 's/^SHA \([0-9a-f]*\) .*/\1/p')
check "1 MiB from the guest arrives intact (sha256)" '[[ $got == "$want" ]]'
forward echo --token-file "$t/token" forward "$seat" 0:127.0.0.1:7002 || bail "seatctl forward did not listen"
echo_port=$fport echo_pid=$fpid
scenario echo "$echo_port" "$t/blob"
scenario parallel "$echo_port" 20 262144
# Well past every buffer on the way (the agent's 4 MiB queue, its 1 MiB of pending input,
# the channel): both directions at once only get through by flow control.
head -c $((16 * 1024 * 1024)) /dev/urandom >"$t/big"
scenario echo "$echo_port" "$t/big"

# Between connections the forward holds nothing: an exec runs while it waits.
timeout 120 "$CTL" exec "$seat" -- echo still-served >"$t/out" 2>&1
check "an exec runs while the forward waits between connections" 'grep -q still-served "$t/out"'

# A target that refuses.
forward refused --token-file "$t/token" forward "$seat" 0:127.0.0.1:7999 || bail "seatctl forward did not listen"
scenario refused "$fport"
refused_said='grep -q "refused: .*could not connect to 127.0.0.1:7999.*Connection refused" "$t/refused.err"'
wait_until "$refused_said"' || ! kill -0 "$fpid" 2>/dev/null' # (seatctl says it once the guest's answer is in)
check "seatctl says the guest could not connect, and why" "$refused_said"
check "seatctl goes on serving after a refused connection" 'kill -0 "$fpid"'
kill_wait "$fpid"

# Only the forwarding user's own connections are carried (issue 35, finding 3). The port
# on 127.0.0.1 is open to every user of the host, and what comes through it reaches the
# seat with the forwarder's token and is recorded as the forwarder's. seatctl forward runs
# as daemon here: nobody's connection and root's (the same uid only, root included) are
# closed without data and never reach the guest; daemon's own goes through.
PY=/usr/bin/python3 # (the other users' interpreter: outside root's home)
nobody_uid=$(id -u nobody) daemon_uid=$(id -u daemon)
starts() { cat "$t/state/seats/$seat"/audit-g*.log 2>/dev/null | grep -c '"forward\.start"'; }
fwd_as=(setpriv --reuid=daemon --regid=daemon --clear-groups --)
forward owner --token-file "$t/token" forward "$seat" 0:127.0.0.1:7002 ||
        bail "seatctl forward as daemon did not listen: $(cat "$t/owner.err")"
fwd_as=()
owner_pid=$fpid owner_port=$fport before=$(starts)
as_nobody timeout 120 "$PY" "$client" stranger "$owner_port" >"$t/out" 2>&1
check "another local user's connection (uid $nobody_uid) to daemon's forward is closed without data" 'grep -q "^PASS" "$t/out"'
timeout 120 "$PY" "$client" stranger "$owner_port" >"$t/out" 2>&1
check "root's connection to daemon's forward is closed without data too (the same uid only)" 'grep -q "^PASS" "$t/out"'
sleep 0.5
check "no refused connection reached the guest (no forward.start in the audit log: $before before, $(starts) after)" \
        '[[ $(starts) == "$before" ]]'
diag_file "$t/owner.err"
check "seatctl says which local uid it refused, and why" \
        'grep -q "connection from 127.0.0.1:[0-9]* refused: made by local uid $nobody_uid, not by uid $daemon_uid (only this user.s own connections are carried)" "$t/owner.err" &&
         grep -q "refused: made by local uid 0, not by uid $daemon_uid" "$t/owner.err"'
as_daemon timeout 600 "$PY" "$client" echo "$owner_port" "$t/blob" >"$t/out" 2>&1
check "daemon's own connection to its forward goes through (1 MiB echoed intact)" 'grep -q "^PASS" "$t/out"'
check "and is recorded (forward.start)" '[[ $(starts) -gt "$before" ]]'
check "seatctl forward serves on after refusing connections" 'kill -0 "$owner_pid"'
kill_wait "$owner_pid"

# Another seat's token opens nothing here.
timeout 60 "$CTL" --token-file "$t/other" forward "$seat" 0:127.0.0.1:7000 2>"$t/other.err" &
opid=$!
if ended "$opid" 60; then
        check "another seat's token is refused (seatctl exits 1)" '[[ $rc == 1 ]]'
        check "the refusal says so" 'grep -q "does not open seat" "$t/other.err"'
else
        not_ok "another seat's token is refused (seatctl still runs)"
        kill_wait "$opid"
fi

# A connection that carries nothing for forward_idle_timeout (20 s here) is reset.
timeout 300 python3 "$client" hold "$echo_port" >"$t/idle" 2>&1 &
ipid=$!
if ended "$ipid" 120; then check "an idle connection is closed (forward_idle_timeout)" 'grep -q ENDED "$t/idle"'
else not_ok "an idle connection is closed (forward_idle_timeout)"; kill_wait "$ipid"; fi

# The audit log: who, which target, bytes each way, for each connection.
audit=$(ls "$t/state/seats/$seat"/audit-g*.log 2>/dev/null | tail -1)
python3 - "$audit" "$want" >"$t/audit" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def data(r): return r.get("data", r)
starts = {r["seq"]: data(r) for r in recs if r.get("type") == "forward.start"}
ends = [data(r) for r in recs if r.get("type") == "forward.end"]
print("starts", len(starts), "ends", len(ends))
def find(port, **want):
    for e in ends:
        s = starts.get(e.get("start"))
        if s and s.get("port") == port and all(e.get(k) == v for k, v in want.items()):
            return s, e
    return None, None
s, e = find(7001, bytes_from_guest=1048576)
print("download", bool(s and s.get("host") in ("localhost", "127.0.0.1") and "uid" in s and e["status"] == "done"))
s, e = find(7000, bytes_to_guest=1048576)
print("upload", bool(s and e["bytes_from_guest"] > 64))
s, e = find(7002, bytes_to_guest=16777219, bytes_from_guest=16777219)
print("echo", bool(s))
s, e = find(7999, status="refused")
print("refused", bool(s and "refused" in e.get("error", "")))
s, e = find(7002, closed_by="idle")
print("idle", bool(s and e["bytes_to_guest"] == 3))
PY
diag_file "$t/audit"
check "the audit log records the download: target, uid, 1 MiB from the guest" 'grep -q "^download True" "$t/audit"'
check "the audit log records the upload: 1 MiB to the guest" 'grep -q "^upload True" "$t/audit"'
check "the audit log records the echo: bytes both ways" 'grep -q "^echo True" "$t/audit"'
check "the audit log records the refused connection and why" 'grep -q "^refused True" "$t/audit"'
check "the audit log records the idle connection's reset (closed_by idle)" 'grep -q "^idle True" "$t/audit"'

# A reset ends the forward: its open connection is closed, seatctl says why and exits.
timeout 300 python3 "$client" hold "$echo_port" >"$t/hold" 2>&1 &
hpid=$!
for _ in $(seq 1 600); do grep -q READY "$t/hold" && break; sleep 0.1; done
check "a connection is open before the reset" 'grep -q READY "$t/hold"'
timeout 600 "$CTL" reset "$seat" >"$t/out" 2>&1
check "the reset completes while a forwarded connection is open" '[[ $? == 0 ]]'
if ended "$hpid" 60; then check "the reset closed the open connection" 'grep -q ENDED "$t/hold"'
else not_ok "the reset closed the open connection"; kill_wait "$hpid"; fi
if ended "$echo_pid" 60; then
        check "seatctl forward ends after the reset (exit 1)" '[[ $rc == 1 ]]'
        diag_file "$t/echo.err"
        check "and says why" 'grep -Eq "reset|cancelled" "$t/echo.err"'
else
        not_ok "seatctl forward ends after the reset"
fi
kill_wait "${fwd_pids[@]}"

# An older guest-init (the hostile agent's hello lists "exec" only) is refused clearly.
if [[ -x $hostile ]]; then
        "$RECIPE" --guest-init "$hostile" --out "$t/old" --name old-agent --quiet --sign-key "$t/test.key" \
                --tools "$build/images:$build/signing" >"$t/out" 2>&1 &&
                "$CTL" -q image import "$t/old/manifest.json" >"$t/out" 2>&1 || bail "cannot build or import the old-agent image"
        old=$(provision_id --image old-agent) || bail "provision of old-agent failed"
        forward old forward "$old" 0:127.0.0.1:80 || bail "seatctl forward did not listen"
        timeout 60 python3 "$client" refused "$fport" >/dev/null 2>&1
        if ended "$fpid" 60; then
                check "a forward on an agent without 'tcp' ends (exit 1)" '[[ $rc == 1 ]]'
        else
                not_ok "a forward on an agent without 'tcp' ends"
        fi
        diag_file "$t/old.err"
        check "the refusal names the image, the agent and the capability" \
                'grep -q "old-agent" "$t/old.err" && grep -q "hostile-agent" "$t/old.err" && grep -q "capability .tcp." "$t/old.err"'
        "$CTL" release "$old" >/dev/null 2>&1
else
        skip "a forward on an agent without 'tcp' is refused" "no hostile agent built (static json-c missing)"
fi

"$CTL" release "$seat" >/dev/null 2>&1
tap_end
