#!/usr/bin/env bash
# tests/bench/interactive (issue 15): how a terminal on a seat feels, against a private seatd
# and a real TCG seat, through the control socket as seatctl and seat-web use it.
#   - keystroke echo: one byte to a terminal running cat (seat.exec.stdin), timed until
#     its echo arrives as output; alone, and while another exec on the same seat floods
#     100 MiB of output;
#   - the agent's exec round trip (seat.exec of `true`) in the same run, the yardstick of
#     the echo's target (p50 at most twice it);
#   - forwarding: 32 MiB from a guest server through `seatctl forward`, against the same
#     32 MiB as an exec's output stream (`seatctl exec cat`).
# Prints the figures and one summary line; asserts nothing about time.
#   usage: bench-interactive.sh BUILD_DIR [SAMPLES]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [SAMPLES]}"
samples=${2:-200}
harness_workdir /var/tmp/seatd-bench-interactive 0755
fwd_pids=()
harness_on_exit 'kill_wait "${fwd_pids[@]}"'

bench_seatd warm_reset=false network=false
seat=$(provision_id)
[[ -n $seat ]] || bail "provision failed"

# echo.py SOCKET SEAT SAMPLES MODE: MODE "echo" prints one keystroke echo time (us) per
# line; "exec" one round trip of seat.exec `true` (us) per line.
cat >"$t/echo.py" <<'PY'
import base64, json, socket, sys, time
path, seat, n, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
f = s.makefile("rb")
def send(o):
    s.sendall((json.dumps(o) + "\n").encode())
def until(pred):
    while True:
        line = f.readline()
        if not line:
            sys.exit("seatd closed the connection")
        m = json.loads(line)
        if m.get("type") == "error":
            sys.exit("error: %s" % m["error"])
        if pred(m):
            return m
send({"id": 1, "method": "hello", "params": {"version": 1}})
until(lambda m: m["id"] == 1)
if mode == "exec":
    for i in range(n):
        t0 = time.perf_counter()
        send({"id": 10 + i, "method": "seat.exec", "params": {"seat": seat, "argv": ["/bin/true"]}})
        until(lambda m: m["id"] == 10 + i and m["type"] == "result")
        print(int((time.perf_counter() - t0) * 1e6), flush=True)
    sys.exit(0)
send({"id": 2, "method": "seat.exec", "params": {"seat": seat, "argv": ["/bin/cat"], "stdin_live": True,
                                                 "pty": {"rows": 24, "cols": 80}}})
deadline = time.time() + float(sys.argv[5]) if len(sys.argv) > 5 else None
for i in range(n + 5):
    ch = chr(ord("a") + i % 26).encode()
    t0 = time.perf_counter()
    send({"id": 100 + i, "method": "seat.exec.stdin", "params": {"exec": 2, "data": base64.b64encode(ch).decode()}})
    got_echo = got_ack = False
    while not (got_echo and got_ack):
        m = until(lambda m: m["id"] in (2, 100 + i))
        if m["id"] == 100 + i:
            got_ack = True
        elif m["type"] == "output" and ch in base64.b64decode(m["output"]["data"]):
            if not got_echo and i >= 5:  # the first few warm the path up
                print(int((time.perf_counter() - t0) * 1e6), flush=True)
            got_echo = True
    if deadline and time.time() > deadline:
        break
PY
pct() { sort -g | awk -v p="$1" '{a[NR]=$1} END {i=int(NR*p/100+0.999); if (i<1) i=1; print a[i]}'; }

python3 "$t/echo.py" "$SEATD_SOCKET" "$seat" "$samples" exec >"$t/exec.us"
python3 "$t/echo.py" "$SEATD_SOCKET" "$seat" "$samples" echo >"$t/echo.us"
exec_p50=$(median_int <"$t/exec.us")
echo_p50=$(median_int <"$t/echo.us")
echo_p99=$(pct 99 <"$t/echo.us")
echo "exec round trip (seat.exec true): p50 ${exec_p50} us over $(wc -l <"$t/exec.us") runs"
echo "keystroke echo alone: p50 ${echo_p50} us, p99 ${echo_p99} us over $(wc -l <"$t/echo.us") keystrokes"

# Under a flood: keystrokes for as long as 100 MiB of another exec's output crosses.
"$CTL" exec --max-output 101M "$seat" -- head -c 104857600 /dev/zero 2>"$t/flood.err" | wc -c >"$t/flood.bytes" &
flood=$!
sleep 1
python3 "$t/echo.py" "$SEATD_SOCKET" "$seat" 100000 echo 600 >"$t/flood.us" &
echoer=$!
wait "$flood" || true
kill "$echoer" 2>/dev/null; wait "$echoer" 2>/dev/null || true
flood_p99=$(pct 99 <"$t/flood.us")
echo "keystroke echo during a 100 MiB flood ($(cat "$t/flood.bytes") bytes arrived): p50 $(median_int <"$t/flood.us") us, p99 ${flood_p99} us over $(wc -l <"$t/flood.us") keystrokes"

# Forwarding against the exec output stream: the same 32 MiB both ways.
size=$((32 * 1024 * 1024))
# (the file first: the exec's process group, and anything of it still running, ends with it)
"$CTL" exec "$seat" -- sh -c "ip link set lo up && head -c $size /dev/urandom >/tmp/big" >"$t/out" 2>&1 ||
        bail "cannot write the guest's file: $(cat "$t/out")"
"$CTL" exec "$seat" -- sh -c "setsid nc -ll -p 7001 -e cat /tmp/big </dev/null >/dev/null 2>&1 & sleep 1" >"$t/out" 2>&1 ||
        bail "cannot start the guest's server: $(cat "$t/out")"
"$CTL" forward "$seat" 0:127.0.0.1:7001 2>"$t/fwd.err" &
fwd_pids+=($!)
port=
for _ in $(seq 1 300); do
        port=$(sed -n 's/^seatctl: forwarding [^ ]*:\([0-9]*\) to .*/\1/p' "$t/fwd.err")
        [[ -n $port ]] && break
        sleep 0.1
done
[[ -n $port ]] || bail "seatctl forward did not listen: $(cat "$t/fwd.err")"
fwd=() str=()
for _ in 1 2 3; do
        r=$(python3 - "$port" "$size" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0, n = time.perf_counter(), 0
while True:
    b = s.recv(1 << 20)
    if not b:
        break
    n += len(b)
dt = time.perf_counter() - t0
if n != int(sys.argv[2]):
    sys.exit("forward: %d of %s bytes" % (n, sys.argv[2]))
print("%.1f" % (n / dt / 1048576))
PY
) || bail "$r"
        fwd+=("$r")
        a=$(ms)
        got=$("$CTL" exec --max-output 33M "$seat" -- cat /tmp/big | wc -c)
        [[ $got == "$size" ]] || bail "exec stream: $got of $size bytes"
        str+=("$(awk -v ms=$(($(ms) - a)) -v n="$size" 'BEGIN {printf "%.1f", n / 1048576 / (ms / 1000)}')")
done
fwd_mib=$(printf '%s\n' "${fwd[@]}" | median)
str_mib=$(printf '%s\n' "${str[@]}" | median)
echo "forward: ${fwd[*]} MiB/s (median ${fwd_mib}); exec output stream: ${str[*]} MiB/s (median ${str_mib})"
ratio=$(awk -v a="$fwd_mib" -v b="$str_mib" 'BEGIN {printf "%.2f", a / b}')
echo_vs_exec=$(awk -v a="$echo_p50" -v b="$exec_p50" 'BEGIN {printf "%.2f", a / b}')
echo "targets: echo p50 <= 2x exec round trip (here ${echo_vs_exec}x); echo p99 under flood <= 50000 us; forward >= 0.5x the exec stream (here ${ratio}x)"
echo "interactive: keystroke_echo_p50_us=$echo_p50 keystroke_echo_p99_us=$echo_p99 echo_under_flood_p99_us=$flood_p99 forward_mib_s=$fwd_mib forward_over_exec_stream=$ratio"
