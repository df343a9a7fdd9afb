#!/usr/bin/env bash
# tests/bench/handout: a facilitator's printable handout, made through seat-web as it ships
# (its own user, TLS with --self-signed, the facilitator's login, CSRF token and form),
# against a private seatd and real TCG seats booted cold (no pool):
#   - the time from the form's POST to the made handout page (polled every 200 ms, as the
#     page reloads itself), for NAMES participants;
#   - with handout_parallel = 1 (the seats one after the other, as seat-web did before)
#     and with handout_parallel = PARALLEL, alternating, ROUNDS times each;
#   - every handout must hold NAMES seats, each its participant's (else the bench stops).
# The client is curl. Prints figures and one summary line; asserts nothing about time.
#   usage: bench-handout.sh BUILD_DIR [NAMES [PARALLEL [ROUNDS]]]   (8, 4, 3)
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [NAMES [PARALLEL [ROUNDS]]]}"
names=${2:-8} parallel=${3:-4} rounds=${4:-3}
need_seat_web
need_cmd curl
harness_workdir /var/tmp/seatd-bench-handout 0755

bench_seatd warm_reset=false network=false facilitator_group=nogroup "pool_max_seats=$((names + 4))"

port=$((20000 + RANDOM % 20000))
url=https://127.0.0.1:$port
F=(curl -s --cacert "$t/web/tls/cert.pem")
web_pid=
web_start() { # PARALLEL: seat-web with that handout_parallel, its facilitator logged in
  kill_wait "$web_pid"
  seat_web_conf "$t/web.conf" listen_port=$port "handout_parallel=$1"
  [[ -f $t/web/facilitators ]] || printf '%s\n' "bench pw" | "$WEB" passwd -c "$t/web.conf" frida >"$t/out" 2>&1 ||
    bail "seat-web passwd failed: $(cat "$t/out")"
  seat_web_up "$t/web.conf" "$port"
  "${F[@]}" -D "$t/h" -o /dev/null -H "Origin: $url" --data-urlencode name=frida --data-urlencode "password=bench pw" "$url/facilitator/login"
  fcookie=$(sed -n 's/^set-cookie: __Host-seatfac=\([^;]*\);.*/\1/Ip' "$t/h" | tr -d '\r')
  csrf=$("${F[@]}" -b "__Host-seatfac=$fcookie" "$url/facilitator/api/session" | json_field 'd["csrf"]') ||
    bail "no facilitator session from seat-web (see $t/web.log)"
}

# handout: one handout of $names names; its time (ms) in $ms; every seat released after.
handout() {
  local list t0 loc page i
  list=$(for i in $(seq 1 "$names"); do echo "p$i"; done)
  t0=$(ms)
  "${F[@]}" -D "$t/h" -o /dev/null -b "__Host-seatfac=$fcookie" -H "Origin: $url" --data-urlencode "csrf=$csrf" \
    --data-urlencode image=test-image --data-urlencode "names=$list" "$url/facilitator/handout"
  loc=$(sed -n 's/^location: \(\/facilitator\/handout\/[A-Za-z0-9_-]*\).*/\1/Ip' "$t/h" | tr -d '\r')
  [[ -n $loc ]] || bail "the handout form was not answered with its page: $(head -1 "$t/h")"
  for _ in $(seq 1 6000); do
    page=$("${F[@]}" -b "__Host-seatfac=$fcookie" "$url$loc")
    [[ $page == *handout-progress* ]] || break
    sleep 0.2
  done
  ms=$(($(ms) - t0))
  [[ $(grep -o 'class="seat"' <<<"$page" | wc -l) == "$names" ]] ||
    bail "the handout holds $(grep -o 'class="seat"' <<<"$page" | wc -l) of $names seats: $(grep -o 'No seat: [^<]*' <<<"$page" | head -1)"
  for i in $("$CTL" --json list | json_field '" ".join(s["id"] for s in d["seats"])'); do "$CTL" -q release "$i" >/dev/null; done
}

serial=() side=()
for r in $(seq 1 "$rounds"); do
  web_start 1; handout; serial+=("$ms")
  web_start "$parallel"; handout; side+=("$ms")
  echo "round $r: $names seats one after the other ${serial[-1]} ms, $parallel at once ${side[-1]} ms"
done
s50=$(printf '%s\n' "${serial[@]}" | median_int) p50=$(printf '%s\n' "${side[@]}" | median_int)
echo "handout of $names cold seats through seat-web: median ${s50} ms one after the other, ${p50} ms with handout_parallel=$parallel"
echo "handout: names=$names parallel=$parallel serial_p50_ms=$s50 parallel_p50_ms=$p50 parallel_over_serial=$(ratio "$p50" "$s50") per_seat_parallel_ms=$((p50 / names))"
