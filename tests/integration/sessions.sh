#!/usr/bin/env bash
# sessions.sh: what a participant's calls may reach across the seat's sessions, against a
# private seatd and a real VM (issue 13, findings 1, 5 and 7). Speaks TAP.
#   - every exec is in the session's audit log before it runs ("exec.start": argv cut to
#     size with the digest of all of it, the digest of stdin) and after ("exec.end"), also
#     a command line close to the 1 MiB frame cap;
#   - requests participant A queued while a reset runs never reach participant B's fresh
#     guest: they fail, saying the seat was reset, and B's session log starts with B's own;
#   - reset and release cancel a running exec (its process group killed in the guest, the
#     exec told "cancelled") instead of waiting for it; the timeout an exec may ask for is
#     capped by exec_max_timeout;
#   - a facilitator on the facilitator socket (as seatd ships it; facilitator_group is
#     nogroup here) resets the seat with no token, a subscriber to events.subscribe sees
#     it go resetting and ready again, the ended session's log records who asked, and
#     metrics count the reset (issue 16).
#   usage: sessions.sh BUILD_DIR
# Builds and signs its own test image; every domain and process it makes is removed on exit.
# Needs root, a running libvirtd (never restarted here), setpriv, python3 and b2sum.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite sessions "$EV"
need_cmd virsh qemu-img python3 setpriv b2sum
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || skip_all "no user nobody / group nogroup"
need_libvirt

harness_seatd_must_live=1
bg_pids=()
harness_on_exit 'kill_wait "${bg_pids[@]}"'
t_start=$(date +%s)

unset SEATD_TOKEN
"$SIGN" keygen --box -p "$t/facilitator.pub" -s "$t/facilitator.key" >/dev/null 2>&1 || bail "seat-sign keygen --box failed"
# No networks and no warm states: neither is what this suite is about, and each saved state
# is one more boot on a 2-core machine.
MAXT=3600
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false \
  "facilitator_key=$t/facilitator.pub" "exec_max_timeout=$MAXT" facilitator_group=nogroup
guestfs_cache_shared

# Participants are nobody, on the participant socket seatd made (its modes as shipped).
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CTL" "$@"; }
new_token_of() { sed -n 's/^new participant token: //p' "$1"; }
# The records of the seat's running session, one JSON object a line (root reads seatd's file).
live_log() { cat "$t/state/seats/$S/audit-g$1.log"; }
# BLAKE2b-512 hex of stdin.
b2() { b2sum -l 512 | awk '{print $1}'; }
# wait_for PID SECONDS: its exit status; 255 when it is still running then (it is killed).
wait_for() {
  local p=$1
  for _ in $(seq 1 $((10 * $2))); do kill -0 "$p" 2>/dev/null || { wait "$p"; return; }; sleep 0.1; done
  kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; return 255
}

# A facilitator's client of the facilitator socket (what seat-web does), run as nobody.
install -m 0644 "$HARNESS_SRC/tests/lib/fac_client.py" "$t/fac.py"
fac() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$t/fac.py" "$@"; }

seatd_start
image_import
"$CTL" -q provision --image test-image --participant alice >"$t/prov" 2>"$t/out" || bail "provision failed"
S=$(awk 'NR==2 {print $1}' "$t/prov") tokA=$(awk 'NR==2 {print $2}' "$t/prov")
[[ $S =~ ^s[0-9a-f]{8}$ && $tokA =~ ^[0-9a-f]{64}$ ]] || bail "no seat to test with"
token_file "$t/tokA" "$tokA" nobody:nogroup 0600
echo "# seat $S ready ($(($(date +%s) - t_start)) s)"

# ---------------------------------------------------------------- 1. every exec is recorded before it runs
printf 'stdin-marker-%s\n' "$RANDOM" >"$t/nobody-stdin"; chmod 0644 "$t/nobody-stdin"
out=$(nobody --token-file "$t/tokA" exec "$S" -- sh -c 'cat; echo ran-small' <"$t/nobody-stdin" 2>"$t/out")
[[ $out == "$(cat "$t/nobody-stdin")"$'\n'ran-small ]] && ok "a participant's exec with stdin runs" || not_ok "a participant's exec with stdin runs ('$out')"
want_argv=$(printf 'sh\0-c\0cat; echo ran-small\0' | b2) want_stdin=$(b2 <"$t/nobody-stdin")
live_log 1 >"$t/log1"
python3 - "$t/log1" "$want_argv" "$want_stdin" >"$t/out" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["type"] == "exec.start" and r["data"]["argv"] == ["sh", "-c", "cat; echo ran-small"]]
assert len(starts) == 1, starts
s = starts[0]
d = s["data"]
assert d["uid"] == 65534 and d["operator"] is False and d["argc"] == 3 and d["argv_truncated"] is False, d
assert d["argv_blake2b"] == sys.argv[2], ("argv digest", d["argv_blake2b"], sys.argv[2])
assert d["stdin_blake2b"] == sys.argv[3] and d["stdin_bytes"] > 0, ("stdin digest", d)
ends = [r for r in recs if r["type"] == "exec.end" and r["data"]["start"] == s["seq"]]
assert len(ends) == 1 and ends[0]["seq"] > s["seq"], ends
e = ends[0]["data"]
assert e["status"] == "exited" and e["code"] == 0 and len(e["stdout_blake2b"]) == 128, e
print("exec.start", s["seq"], "exec.end", ends[0]["seq"])
PY
[[ $? == 0 ]] && ok "its exec.start (uid, argv, digests of argv and stdin) precedes it, its exec.end points back to it ($(tail -1 "$t/out"))" \
  || not_ok "exec.start with the argv and stdin digests, then exec.end pointing back to it"

# A command line near the 1 MiB frame cap: seatd once ran it and then failed to log it
# (the record was over AUDIT_RECORD_MAX and the failure ignored). Sizes step over the
# edge, so some of them are refused by a frame cap, and the others run: each that runs
# must be in the log, its argv cut but bound by the digest of all of it.
python3 - "$t/big" <<'PY'
import hashlib, sys
out = sys.argv[1]
for k in range(22):
    target = 1024 * 1024 - 900 + 50 * k           # bytes of the argv's JSON in a frame
    script = f"echo ran-big-{k}"
    args = ["sh", "-c", script, "sh"]
    used = sum(len(a) + 3 for a in args)           # "a", per element
    while used < target:
        n = min(4000, target - used - 3)
        if n <= 0:
            break
        args.append(chr(ord("a") + len(args) % 26) * n)
        used += n + 3
    open(f"{out}.{k}", "wb").write(b"\0".join(a.encode() for a in args) + b"\0")
    open(f"{out}.{k}.b2", "w").write(hashlib.blake2b(b"\0".join(a.encode() for a in args) + b"\0").hexdigest())
PY
ran=() refused=()
for k in $(seq 0 21); do
  mapfile -d '' -t args <"$t/big.$k"
  out=$("$CTL" exec "$S" -- "${args[@]}" </dev/null 2>"$t/big.$k.err")
  if [[ $out == "ran-big-$k" ]]; then ran+=("$k"); else refused+=("$k"); fi
done
echo "# near 1 MiB: ran ${ran[*]:-none}; refused ${refused[*]:-none} ($(head -c 150 "$t/big.${refused[0]:-0}.err" 2>/dev/null))"
live_log 1 >"$t/log1"
# First whether a record of any kind names it at all, then what exec.start says of it.
: >"$t/out"; logged=0
for k in "${ran[@]}"; do
  grep -qF "\"echo ran-big-$k\"" "$t/log1" && logged=$((logged + 1)) || echo "exec $k ran and no record names it" >>"$t/out"
done
[[ ${#ran[@]} -gt 0 && $logged == "${#ran[@]}" ]] && ok "each of the ${#ran[@]} commands near 1 MiB that ran is in the audit log" \
  || not_ok "each command near 1 MiB that ran is in the audit log ($logged of ${#ran[@]})"
: >"$t/out"; good=1
for k in "${ran[@]}"; do
  python3 - "$t/log1" "$k" "$(cat "$t/big.$k.b2")" >>"$t/out" 2>&1 <<'PY' || good=0
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
k, digest = sys.argv[2], sys.argv[3]
starts = [r for r in recs if r["type"] == "exec.start" and f"echo ran-big-{k}" in r["data"]["argv"]]
assert len(starts) == 1, f"exec {k}: no exec.start"
d = starts[0]["data"]
assert d["argv_blake2b"] == digest, f"exec {k}: argv digest {d['argv_blake2b']} != {digest}"
assert d["argv_truncated"] is True and d["argv_bytes"] > 1000000, f"exec {k}: {d['argv_truncated']} {d['argv_bytes']}"
assert any(r["type"] == "exec.end" and r["data"]["start"] == starts[0]["seq"] for r in recs), f"exec {k}: no exec.end"
PY
done
[[ ${#ran[@]} -gt 0 && $good == 1 ]] && ok "... each as an exec.start with its argv cut to size and the digest of all of it, and its exec.end" \
  || not_ok "... each as an exec.start with its argv cut to size and the digest of all of it, and its exec.end"

# ---------------------------------------------------------------- 2. A's calls never reach B's session
# Four loops of A's exec, each always with one call in flight (authorised, waiting for the
# seat or running), while an operator resets the seat for participant B. A loop ends when
# A's token is refused outright (the reset handed out B's).
rm -f "$t/stop"
for i in 1 2 3 4; do
  ( while [[ ! -e $t/stop ]]; do
      o=$(nobody --token-file "$t/tokA" exec "$S" -- touch /tmp/pwned 2>&1); echo "${o:+$o$'\n'}rc=$?" >>"$t/loop.$i"
      [[ $o == *"this token does not open seat"* ]] && break
    done ) &
  bg_pids+=($!)
done
# The reset comes once each loop has had a call answered (so that calls are in flight
# then, however slowly they start).
loops_calling() { local i; for i in 1 2 3 4; do grep -qs '^rc=' "$t/loop.$i" || return 1; done; }
wait_until loops_calling
"$CTL" reset "$S" >"$t/reset1" 2>"$t/out"; rc=$?
touch "$t/stop"; wait "${bg_pids[@]}" 2>/dev/null; bg_pids=()
tokB=$(new_token_of "$t/reset1")
[[ $rc == 0 && $tokB =~ ^[0-9a-f]{64}$ ]] || bail "the reset for participant B failed: $(cat "$t/out")"
token_file "$t/tokB" "$tokB" nobody:nogroup 0600
out=$(nobody --token-file "$t/tokB" exec "$S" -- sh -c 'echo b-first; test -e /tmp/pwned && echo PWNED' 2>&1)
cat "$t"/loop.* >"$t/out"; echo "B: $out" >>"$t/out"
[[ $out == b-first ]] && ok "B's fresh guest has no /tmp/pwned from A's calls queued across the reset" || not_ok "B's fresh guest has no /tmp/pwned from A's calls queued across the reset"
stale=$(cat "$t"/loop.* | grep -cE "was reset after this request was authorised|is being reset or released")
[[ $stale -gt 0 ]] && ok "A's calls caught by the reset failed, saying so ($stale of $(cat "$t"/loop.* | grep -c '^rc='): $(cat "$t"/loop.* | grep -m1 -oE "seat '$S' (was reset after|is being reset)[^:]*"))" \
  || not_ok "A's calls caught by the reset failed, saying so"
live_log 2 >"$t/log2"
python3 - "$t/log2" >"$t/out" 2>&1 <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in recs if r["type"] in ("exec.start", "exec.end", "exec", "file_put", "file_get")]
assert calls, "no exec in the new session's log"
first = calls[0]
assert first["type"] == "exec.start" and "echo b-first" in " ".join(first["data"]["argv"]), f"first call: {first}"
assert not any(r["data"].get("argv") == ["touch", "/tmp/pwned"] for r in recs), "A's touch /tmp/pwned is in B's session"
print(len(recs), "records")
PY
[[ $? == 0 ]] && ok "B's session log has no exec before B's first, and none of A's" || not_ok "B's session log has no exec before B's first, and none of A's"
denied_msg=$(nobody --token-file "$t/tokA" exec "$S" -- true 2>&1)
[[ $denied_msg == *"this token does not open seat '$S'"* ]] && ok "A's token is refused afterwards" || not_ok "A's token is refused afterwards ($denied_msg)"

# ---------------------------------------------------------------- 3. reset and release cancel a running exec
out=$(nobody --token-file "$t/tokB" exec --timeout $((MAXT + 1)) "$S" -- true 2>&1); rc=$?
[[ $rc == 125 && $out == *"exec_max_timeout = $MAXT"* ]] && ok "an exec asking for more than exec_max_timeout is refused ($out)" \
  || not_ok "an exec asking for more than exec_max_timeout is refused (rc $rc: $out)"
# B's sleep with the longest timeout allowed; a facilitator resets the seat under it,
# through the facilitator socket, while a dashboard's subscription watches. The
# reset boots a new machine (seconds, or minutes on a busy TCG host): what is timed is how
# soon the sleep gives the seat up.
# setpriv execs python: $! is the watcher itself
setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$t/fac.py" watch "$t/facilitator.sock" "$S" >"$t/events" & watch_pid=$!
nobody --token-file "$t/tokB" exec --timeout "$MAXT" "$S" -- sh -c 'sleep 3600 & sleep 3601' >"$t/sleep1" 2>&1 &
sleep_pid=$! bg_pids+=("$sleep_pid" "$watch_pid")
# The reset comes once seatd has admitted the sleep (its exec.start in the session's log),
# the watcher has its snapshot, and none has come for a second: seatd sends changes closer
# than 250 ms together, and the reset's first (resetting, generation 2) must go out alone.
wait_until '[[ $(live_log 2) == *'\''"argv":["sh","-c","sleep 3600 & sleep 3601"]'\''* ]] || ! kill -0 "$sleep_pid" 2>/dev/null'
events_quiet() { local a; a=$(wc -l <"$t/events"); sleep 1; [[ $(wc -l <"$t/events") == "$a" ]]; }
wait_until 'grep -q "^ready 2 " "$t/events" && events_quiet || ! kill -0 "$watch_pid" 2>/dev/null'
t0=$(ms)
timeout 900 setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$t/fac.py" reset "$t/facilitator.sock" "$S" carol >"$t/reset2" 2>"$t/out" &
reset_pid=$! bg_pids+=("$reset_pid")
wait_for "$sleep_pid" 60; src=$?
cancel_ms=$(($(ms) - t0))
wait "$reset_pid"; rc=$?
bg_pids=("$watch_pid")
tokC=$(new_token_of "$t/reset2")
cat "$t/reset2" >>"$t/out"
cat "$t/sleep1" >>"$t/out"
[[ $src == 125 && $cancel_ms -lt 10000 ]] && grep -q "cancelled: an operator resets or releases seat '$S'" "$t/sleep1"   && ok "reset under a running 'sleep 3600' (timeout ${MAXT} s): the exec is cancelled $cancel_ms ms after the reset began, and says so"   || not_ok "reset under a running 'sleep 3600': the exec is cancelled within 10 s, and says so (rc $src after $cancel_ms ms)"
[[ $rc == 0 && $tokC =~ ^[0-9a-f]{64}$ ]] && ok "the facilitator's reset completes (in $(($(ms) - t0)) ms, a cold boot included) and hands back the new token" || not_ok "the facilitator's reset completes (rc $rc)"
wait_until 'grep -q "^ready 3 " "$t/events"'
cp "$t/events" "$t/out"
seq_seen=$(awk '{print $1 $2}' "$t/events" | uniq | tr '\n' ' ')
[[ $seq_seen == "ready2 "*"resetting2 "*"ready3 "* ]] \
  && ok "the dashboard's subscription saw it live: $seq_seen($(wc -l <"$t/events") snapshots)" \
  || not_ok "the subscription sees ready, resetting, ready again ($seq_seen)"
out=$(fac metrics "$t/facilitator.sock" 2>&1)
[[ $out == "resets 2 provisions 1 ready 1 calls "* ]] && ok "metrics count both resets and the provision ($out)" || { echo "$out" >"$t/out"; not_ok "metrics count the reset ($out)"; }
kill "$watch_pid" 2>/dev/null; wait "$watch_pid" 2>/dev/null; bg_pids=()
token_file "$t/tokC" "$tokC" nobody:nogroup 0600
nobody --token-file "$t/tokC" exec --timeout "$MAXT" "$S" -- sh -c 'echo c-first; sleep 3600' >"$t/sleep2" 2>&1 &
sleep_pid=$! bg_pids+=("$sleep_pid")
wait_until 'grep -q c-first "$t/sleep2" || ! kill -0 "$sleep_pid" 2>/dev/null'
out=$(fac audit "$t/facilitator.sock" "$S" 2>&1)
[[ $out == "start session "*"exec.start"* ]] && ok "the facilitator reads the running session's audit log in 4 KiB pieces, no token ($out)" \
  || { echo "$out" >"$t/out"; not_ok "the facilitator reads the running session's audit log"; }
sleep 1
t0=$(ms)
timeout 120 "$CTL" release "$S" >"$t/out" 2>&1; rc=$?
release_ms=$(($(ms) - t0))
wait_for "$sleep_pid" 15; src=$?
bg_pids=()
[[ $rc == 0 && $release_ms -lt 10000 ]] && ok "release under a running 'sleep 3600' (timeout ${MAXT} s) finishes in $release_ms ms" \
  || not_ok "release under a running 'sleep 3600' finishes in under 10 s (rc $rc after $release_ms ms)"
cat "$t/sleep2" >"$t/out"
[[ $src == 125 ]] && grep -q "cancelled: an operator resets or releases seat '$S'" "$t/sleep2" \
  && ok "that exec reports it was cancelled" || not_ok "that exec reports it was cancelled (rc $src)"
[[ -z $(our_domains) ]] && ok "the seat's machines are gone" || { our_domains >"$t/out"; not_ok "the seat's machines are gone"; }

# ---------------------------------------------------------------- 4. the sealed sessions
# Each session was sealed in the background (libguestfs reads the old disk: 10-20 s per
# session under TCG). The archives verify; opened, their audit logs hold the records above.
for g in 1 2 3; do
  for _ in $(seq 1 1800); do [[ -n $(ls "$t/state/evidence/archives/$S-g$g-"*.seatdev 2>/dev/null) ]] && break; sleep 0.1; done
done
a1=$(ls "$t/state/evidence/archives/$S-g1-"*.seatdev 2>/dev/null | head -1)
a2=$(ls "$t/state/evidence/archives/$S-g2-"*.seatdev 2>/dev/null | head -1)
a3=$(ls "$t/state/evidence/archives/$S-g3-"*.seatdev 2>/dev/null | head -1)
: >"$t/out"; good=1
for a in "$a1" "$a3"; do
  [[ -n $a ]] && "$CTL" evidence verify "$a" --host-key "$t/state/trust/host.pub" --seat "$S" >>"$t/out" 2>&1 || good=0
done
[[ $good == 1 ]] && ok "seatctl evidence verify accepts the archives of sessions 1 and 3" || { ls -R "$t/state/evidence" >>"$t/out" 2>&1; not_ok "seatctl evidence verify accepts the archives of sessions 1 and 3"; }
: >"$t/out"
"$CTL" evidence open "$a1" --key "$t/facilitator.key" --out "$t/open1" --host-key "$t/state/trust/host.pub" >>"$t/out" 2>&1 &&
  "$CTL" evidence open "$a3" --key "$t/facilitator.key" --out "$t/open3" --host-key "$t/state/trust/host.pub" >>"$t/out" 2>&1 &&
  python3 - "$(ls "$t/open1/"*audit* | head -1)" "$(ls "$t/open3/"*audit* | head -1)" "${#ran[@]}" >>"$t/out" 2>&1 <<'PY'
import json, sys
one = [json.loads(l) for l in open(sys.argv[1])]
three = [json.loads(l) for l in open(sys.argv[2])]
for recs in (one, three):
    starts = {r["seq"] for r in recs if r["type"] == "exec.start"}
    ends = [r["data"]["start"] for r in recs if r["type"] == "exec.end"]
    assert sorted(ends) == sorted(starts), ("every exec.start has its exec.end", starts, ends)
    assert recs[-1]["type"] == "end", recs[-1]
big = [r for r in one if r["type"] == "exec.start" and r["data"]["argv_truncated"]]
assert len(big) == int(sys.argv[3]), (len(big), sys.argv[3])
cancelled = [r["data"] for r in three if r["type"] == "exec.end" and r["data"]["status"] == "cancelled"]
assert len(cancelled) == 1 and cancelled[0]["cancelled_by"] == "reset or release", cancelled
PY
[[ $? == 0 ]] && ok "opened: every exec.start has its exec.end, the near-1 MiB ones are there, the released session's sleep ended 'cancelled'" \
  || not_ok "opened archives: exec.start/exec.end pairs, the cut argv records, the cancelled sleep"

"$CTL" evidence open "$a2" --key "$t/facilitator.key" --out "$t/open2" --host-key "$t/state/trust/host.pub" >"$t/out" 2>&1 &&
  python3 - "$(ls "$t/open2/"*audit* | head -1)" "$(ls "$t/open1/"*audit* | head -1)" >>"$t/out" 2>&1 <<'PY'
import json, sys
two = [json.loads(l) for l in open(sys.argv[1])]
one = [json.loads(l) for l in open(sys.argv[2])]
c2 = [r["data"] for r in two if r["type"] == "control"]
assert c2 == [{"method": "seat.reset", "uid": 65534, "via": "facilitator socket", "facilitator": "carol"}], c2
c1 = [r["data"] for r in one if r["type"] == "control"]
assert c1 == [{"method": "seat.reset", "uid": 0, "via": "operator socket"}], c1
PY
[[ $? == 0 ]] && ok "the sealed logs say who ended each session: the operator (uid 0), then facilitator 'carol' through the facilitator socket" \
  || not_ok "the sealed logs record who reset the seat"

kill -0 "$seatd_pid" 2>/dev/null && ok "seatd is still serving" || not_ok "seatd is still serving"
echo "# took $(($(date +%s) - t_start)) s"
echo "1..$n"
exit $((failed > 0))
