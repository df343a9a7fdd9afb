#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp-stall.sh: an MCP session whose server stops reading cannot freeze seat-web's event
# loop (issue 35 #7). seat-web as it ships (its own user, TLS) in front of a scripted seatd
# (fake-seatd.py: its terminals echo) with stuck-mcp.py as its `seatctl mcp`: a server that
# answers initialize, then chatters on its stdout and never reads its stdin again. While
# seat B's token holder opens sessions and posts 4 MiB tool calls into them as fast as
# seat-web answers, seat A's participant types into a browser terminal, one key at a time.
# Checks:
#   - every key comes back, and the echo's p99 is under 1 s. This is a bound on a stall,
#     not a benchmark: a write that waited on the child stopped the whole loop for 5 s at a
#     time (p99 10 s before the fix). The issue's bar, 100 ms, is what a plain build shows
#     here (p99 19 to 33 ms), and the diag line prints it; the check leaves 10x for the
#     sanitizer builds and a loaded host (scripts/test runs it under ASan beside a TCG
#     guest), where 100 ms would fail by chance (issue 43);
#   - the posts are queued for the child and refused with 503 once its queue is full, with
#     a message that says why (they are not dropped silently, nor do they end the session);
#   - a new MCP session of seat A starts while B's server is still stuck.
# No VM, no libvirt. Speaks TAP.
#   usage: mcp-stall.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
need_seat_web
[[ $(id -u) == 0 ]] || skip_all "needs root (seat-web runs as nobody, as it ships)"
need_cmd -h "apt-get install curl python3 util-linux" curl python3 setpriv
here=$(cd "$(dirname "$0")" && pwd)

harness_workdir /tmp/seatd-mcp-stall 0755
SA=s1a2b3c4d SB=s2a2b3c4d
tokA=$(printf 'a%.0s' {1..64}) tokB=$(printf 'b%.0s' {1..64})
python3 "$here/fake-seatd.py" "$t/participant.sock" "$SA=$tokA" "$SB=$tokB" >"$t/seatd.calls" 2>"$t/seatd.err" &
fake_pid=$!
harness_on_exit 'kill_wait $fake_pid'
wait_until '[[ -S $t/participant.sock ]] || ! kill -0 "$fake_pid" 2>/dev/null'
[[ -S $t/participant.sock ]] || bail "fake-seatd.py did not listen: $(cat "$t/seatd.err")"
install -m 0755 "$here/stuck-mcp.py" "$t/stuck-mcp"

port=$((20000 + RANDOM % 20000))
seat_web_conf "$t/web.conf" listen_port=$port seatctl="$t/stuck-mcp" mcp_max_body=4194304 \
        mcp_sessions_per_seat=64 mcp_max_sessions=64 login_rate_per_address=1000 login_rate_per_seat=1000
seat_web_up "$t/web.conf" "$port"

cat >"$t/stall.py" <<'PY'
import json, os, socket, ssl, statistics, sys, threading, time
sys.path.insert(0, os.environ["SEATWEB_CLIENT_DIR"])
from seatweb_client import Client, read_head

port, cafile, SA, tokA, SB, tokB = int(sys.argv[1]), sys.argv[2], *sys.argv[3:7]
c = Client(port, cafile)
stop = threading.Event()
tally = {}

def post(seat, token, body, sid=None, want_event=False):
    """One MCP POST: its status line, its session id, and its first event when asked."""
    s = c.connect(timeout=60)
    try:
        s.sendall(("POST /mcp/%s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                   "%sContent-Length: %d\r\n\r\n" % (seat, port, token, "Mcp-Session-Id: %s\r\n" % sid if sid else "",
                                                     len(body))).encode() + body)
        head, rest = read_head(s)
        status = head.split("\r\n")[0]
        session = next((l.split(":", 1)[1].strip() for l in head.split("\r\n") if l.lower().startswith("mcp-session-id:")), None)
        while (want_event or " 200 " not in status) and b"\n\n" not in rest and b"}" not in rest:
            b = s.recv(65536)
            if not b:
                break
            rest += b
        return status, session, rest.decode("utf-8", "replace")
    finally:
        s.close()  # (a request's stream closed early: seat-web cancels it in the child)

INIT = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stall", "version": "0"}}}).encode()
def big(i):
    return json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
        "name": "exec", "arguments": {"command": ["true", "x" * (4 * 1024 * 1024 - 200)]}}}).encode()

def attack():
    i = 1
    while not stop.is_set():
        status, sid, _ = post(SB, tokB, INIT, want_event=True)
        if not sid:
            tally["initialize refused: " + status] = tally.get("initialize refused: " + status, 0) + 1
            time.sleep(0.1)
            continue
        while not stop.is_set():
            status, _, body = post(SB, tokB, big(i), sid)
            i += 1
            key = status.split(" ", 2)[1]
            if " 503 " in status:
                key += " (queue full)" if "has not yet read" in body else " (session ended)"
            tally[key] = tally.get(key, 0) + 1
            if "session ended" in key or " 404 " in status:
                break

def typing(term, n, limit=60):
    """n keys, one at a time, each timed to its echo (ms); those typed within limit seconds."""
    lat, end = [], time.monotonic() + limit
    for k in range(n):
        if time.monotonic() > end:
            break
        ch = bytes([ord("a") + k % 26])
        t0 = time.perf_counter()
        term.send(ch)
        term.wait_for(ch)
        lat.append((time.perf_counter() - t0) * 1e3)
        time.sleep(0.05)
    return lat

term = c.terminal(SA, c.login(SA, tokA))
term.s.settimeout(30)
before = typing(term, 20)
attackers = [threading.Thread(target=attack, daemon=True) for _ in range(2)]
for a in attackers:
    a.start()
time.sleep(1)  # the attack under way: B's server stuck, its pipe full
during = typing(term, 150)
status, sid, body = post(SA, tokA, INIT, want_event=True)
other = "200" if " 200 " in status and sid and "stuck-mcp" in body else status
stop.set()
for a in attackers:
    a.join(timeout=60)
p99 = lambda xs: sorted(xs)[min(len(xs) - 1, int(len(xs) * 0.99))]
print("echo", len(before), "%.1f" % statistics.median(before), "%.1f" % p99(before),
      len(during), "%.1f" % statistics.median(during), "%.1f" % p99(during), "%.1f" % max(during))
print("other", other)
for k in sorted(tally):
    print("tally", tally[k], k)
PY

PYTHONDONTWRITEBYTECODE=1 SEATWEB_CLIENT_DIR="$HARNESS_SRC/tests/lib" timeout 300 \
        python3 "$t/stall.py" "$port" "$t/web/tls/cert.pem" "$SA" "$tokA" "$SB" "$tokB" >"$t/result" 2>"$t/err"
rc=$?
grep '^tally ' "$t/result" | sed 's/^tally /# B'"'"'s posts: /'
read -r _ nb b50 b99 nd d50 d99 dmax < <(grep '^echo ' "$t/result")
diag "A's keystroke echo (ms): before p50 ${b50:-?} p99 ${b99:-?}; during the attack p50 ${d50:-?} p99 ${d99:-?} max ${dmax:-?}"
[[ $rc == 0 && ${nd:-0} == 150 ]] && ok "A's terminal echoed all 150 keys during the attack" ||
        not_ok "A's terminal echoed ${nd:-0} of 150 keys within 60 s during the attack (rc $rc) $(tail -3 "$t/err")"
awk -v p="${d99:-1e9}" 'BEGIN { exit !(p < 1000) }' &&
        ok "A's echo p99 during the attack: ${d99} ms, under 1 s (seat-web's loop never waits on B's stuck server)" ||
        not_ok "A's echo p99 during the attack: ${d99:-?} ms, not under 1 s (the loop stalled)"
grep -q '^tally [0-9]* 200$' "$t/result" && grep -q '^tally [0-9]* 503 (queue full)$' "$t/result" &&
        ! grep -q 'session ended' "$t/result" &&
        ok "B's posts queued for the stuck server, then refused with 503 saying why; the session lives on" ||
        not_ok "B's posts: $(grep '^tally ' "$t/result" | cut -d' ' -f2- | paste -sd,)"
grep -q '^other 200$' "$t/result" && ok "a new MCP session of seat A started during the attack" ||
        not_ok "a new MCP session of seat A: $(grep '^other ' "$t/result")"
kill -0 "$web_pid" 2>/dev/null && ok "seat-web serves on" || not_ok "seat-web exited: $(tail -3 "$t/web.log")"
tap_end
