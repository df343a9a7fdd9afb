#!/usr/bin/env bash
# tests/bench/web (issue 16): browser terminals at a workshop's scale, against a private
# seatd, real TCG seats and seat-web as it ships (its own user, TLS with --self-signed).
#   - TERMINALS terminal WebSockets open at once (default 50), spread over SEATS seats
#     (default 4), each a login shell in its seat, as the page opens them;
#   - each types one key at a time (a new one every 200 ms) and times its echo;
#   - page_ready: from the login POST to the terminal's first output (the prompt), which is
#     when a participant can type;
#   - the same keystroke echo straight through seatd's participant socket (seat.exec with
#     a terminal, no seat-web), the obvious alternative, in the same run;
#   - seat-web's RSS with every terminal open.
# The client is Python's own (sockets, ssl, the WebSocket framing of RFC 6455 written
# out below): nothing here is seat-web's code. Prints figures and one summary line;
# asserts nothing about time.
#   usage: bench-web.sh BUILD_DIR [TERMINALS [SEATS [KEYS]]]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [TERMINALS [SEATS [KEYS]]]}"
terminals=${2:-50} seats=${3:-4} keys=${4:-20}
need_seat_web
harness_workdir /var/tmp/seatd-bench-web 0755

per_seat=$(((terminals + seats - 1) / seats))
bench_seatd warm_reset=false network=false participant_max_connections=$((terminals + 32)) seat_max_calls=$((per_seat + 2)) \
        participant_max_calls=$((terminals + 16))
"$CTL" -q --json provision --image test-image --participant bench --count "$seats" >"$t/prov" || bail "provision failed"

port=$((20000 + RANDOM % 20000))
seat_web_conf "$t/web.conf" listen_port=$port max_terminals=$((terminals + 8)) terminals_per_session=$per_seat \
        login_rate_per_address=100 login_rate_per_seat=100 max_connections=$((terminals * 2 + 64))
seat_web_up "$t/web.conf" "$port"

cat >"$t/ws.py" <<'PY'
import json, os, statistics, sys, threading, time
sys.path.insert(0, os.environ["SEATWEB_CLIENT_DIR"])
from seatweb_client import Client

port, cafile, prov, n_terms, n_keys, out_dir = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
seats = json.load(open(prov))["seats"]
client = Client(port, cafile)
login, Term = client.login, client.terminal

results, ready, errors = [], [], []
lock = threading.Lock()
start = threading.Barrier(n_terms + 1)

def run(i, seat, cookie_box):
    try:
        t0 = time.perf_counter()
        with lock:
            if seat["id"] not in cookie_box:
                cookie_box[seat["id"]] = login(seat["id"], seat["token"])
        t = Term(seat["id"], cookie_box[seat["id"]])
        t.send(json.dumps({"type": "resize", "rows": 24, "cols": 80}).encode(), opcode=1)
        t.send(b"echo READY-$((40+2))\r")
        t.wait_for(b"READY-42")
        with lock:
            ready.append((time.perf_counter() - t0) * 1e3)
        start.wait()
        mine = []
        for k in range(n_keys):
            ch = bytes([ord("A") + (i + k) % 26])
            t0 = time.perf_counter()
            t.send(ch)
            t.wait_for(ch)
            mine.append((time.perf_counter() - t0) * 1e6)
            time.sleep(0.2)
        with lock:
            results.extend(mine)
        t.send(b"\x03exit\r")
    except Exception as e:
        with lock:
            errors.append("terminal %d: %s" % (i, e))
        try:
            start.abort()
        except Exception:
            pass

cookies = {}
threads = [threading.Thread(target=run, args=(i, seats[i % len(seats)], cookies)) for i in range(n_terms)]
for th in threads:
    th.start()
try:
    start.wait(timeout=600)
    open(os.path.join(out_dir, "all-open"), "w").write("%d\n" % n_terms)
except threading.BrokenBarrierError:
    pass
for th in threads:
    th.join()
if errors:
    sys.exit("\n".join(errors[:5]))
results.sort()
p = lambda q: results[min(len(results) - 1, int(len(results) * q))]
print("%d %d %d %d" % (len(ready), statistics.median(results), p(0.99), statistics.median(ready)))
PY

# seat-web's RSS once every terminal is open (the client writes all-open then).
( for _ in $(seq 1 6000); do [[ -f $t/all-open ]] && break; sleep 0.1; done
  awk '/^VmRSS/ {print int($2 / 1024)}' "/proc/$web_pid/status" >"$t/rss" ) &
rss_watch=$!
read -r opened p50 p99 ready_ms < <(PYTHONDONTWRITEBYTECODE=1 SEATWEB_CLIENT_DIR="$HARNESS_SRC/tests/lib" python3 "$t/ws.py" "$port" "$t/web/tls/cert.pem" "$t/prov" "$terminals" "$keys" "$t") ||
        bail "the WebSocket client failed (see above)"
wait "$rss_watch" || true
rss=$(cat "$t/rss" 2>/dev/null || echo 0)
echo "$opened terminals over $seats seats: keystroke echo p50 ${p50} us, p99 ${p99} us ($((opened * keys)) keystrokes); page ready (login to prompt) median ${ready_ms} ms; seat-web RSS ${rss} MiB"

# The same echo without seat-web: seat.exec with a terminal on seatd's participant socket.
seat1=$(json_field 'd["seats"][0]["id"]' <"$t/prov") tok1=$(json_field 'd["seats"][0]["token"]' <"$t/prov")
direct=$(python3 - "$t/participant.sock" "$seat1" "$tok1" 200 <<'PY'
import base64, json, socket, statistics, sys, time
path, seat, token, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rb")
send = lambda o: s.sendall((json.dumps(o) + "\n").encode())
def until(pred):
    while True:
        m = json.loads(f.readline())
        if m.get("type") == "error":
            sys.exit(str(m["error"]))
        if pred(m):
            return m
send({"id": 1, "method": "hello", "params": {"version": 1}}); until(lambda m: m["id"] == 1)
send({"id": 2, "method": "seat.exec", "params": {"seat": seat, "token": token, "argv": ["/bin/cat"], "stdin_live": True, "pty": {"rows": 24, "cols": 80}}})
lat = []
for i in range(n + 5):
    ch = bytes([ord("a") + i % 26]); t0 = time.perf_counter()
    send({"id": 100 + i, "method": "seat.exec.stdin", "params": {"exec": 2, "data": base64.b64encode(ch).decode()}})
    echo = ack = False
    while not (echo and ack):
        m = until(lambda m: m["id"] in (2, 100 + i))
        if m["id"] == 100 + i: ack = True
        elif m["type"] == "output" and ch in base64.b64decode(m["output"]["data"]):
            if not echo and i >= 5: lat.append((time.perf_counter() - t0) * 1e6)
            echo = True
print(int(statistics.median(lat)))
PY
) || bail "the direct echo failed"
ratio=$(awk -v a="$p50" -v b="$direct" 'BEGIN {printf "%.2f", a / b}')
echo "keystroke echo straight through seatd (no seat-web): p50 ${direct} us; through seat-web ${ratio}x that"
echo "target: p99 echo <= 100000 us with $terminals terminals (here ${p99} us)"
echo "web: terminals=$opened ws_echo_p50_us=$p50 ws_echo_p99_us=$p99 page_ready_ms=$ready_ms seat_web_rss_mib=$rss ws_over_direct=$ratio"
