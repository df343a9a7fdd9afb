#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# login-limits.sh: seat-web's login rate limits (issue 35 #6) with curl, in front of a
# scripted seatd (fake-seatd.py: three seats, no VM). Speaks TAP.
#   - only failures cost: successful logins (participant, facilitator, an MCP session's
#     token) from one address are never refused; failed ones are, past the bucket;
#   - bearer-less MCP requests have a bucket of their own: they neither lock out the
#     address's logins nor are locked out by its failed ones;
#   - a seat whose bucket wrong tokens have emptied still lets its token in from an address
#     with a full bucket, which it stakes whole: a wrong token then costs that address a
#     minute; an address that failed recently is refused for the seat;
#   - a facilitator's name gets no such relief (passwords can be guessed).
#   usage: login-limits.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
need_seat_web
[[ $(id -u) == 0 ]] || skip_all "needs root (seat-web runs as nobody, as it ships)"
need_cmd -h "apt-get install curl python3 util-linux" curl python3 setpriv
here=$(cd "$(dirname "$0")" && pwd)

harness_workdir /tmp/seatd-login-limits 0755
S1=s1a2b3c4d S2=s2a2b3c4d S3=s3a2b3c4d
tok1=$(printf '1%.0s' {1..64}) tok2=$(printf '2%.0s' {1..64}) tok3=$(printf '3%.0s' {1..64})
python3 "$here/fake-seatd.py" "$t/participant.sock" "$S1=$tok1" "$S2=$tok2" "$S3=$tok3" >"$t/seatd.calls" 2>"$t/seatd.err" &
fake_pid=$!
harness_on_exit 'kill_wait $fake_pid'
wait_until '[[ -S $t/participant.sock ]] || ! kill -0 "$fake_pid" 2>/dev/null'
[[ -S $t/participant.sock ]] || bail "fake-seatd.py did not listen: $(cat "$t/seatd.err")"

port=$((20000 + RANDOM % 20000))
# Rates of 2 a minute (one back every 30 s) keep the steps below far from a refill on a
# slow host; bearer-less MCP requests get 4, more than the logins.
seat_web_conf "$t/web.conf" listen_port=$port login_rate_per_address=2 login_rate_per_seat=2 \
        facilitator_login_rate_per_address=2 facilitator_login_rate_per_name=2 \
        mcp_unauthenticated_rate_per_address=4 mcp_sessions_per_seat=64 mcp_max_sessions=64 seatctl=/bin/true
printf '%s\n' "fac pw" | "$WEB" passwd -c "$t/web.conf" alice >"$t/out" 2>&1 || bail "seat-web passwd: $(cat "$t/out")"
printf '%s\n' "bob pw" | "$WEB" passwd -c "$t/web.conf" bob >"$t/out" 2>&1 || bail "seat-web passwd: $(cat "$t/out")"
seat_web_up "$t/web.conf" "$port"
url=https://127.0.0.1:$port
C=(curl -s --cacert "$t/web/tls/cert.pem")

# login ADDRESS SEAT TOKEN: the status code; the body in $t/body.
login() { "${C[@]}" --interface "$1" -o "$t/body" -w '%{http_code}' --data-urlencode "seat=$2" --data-urlencode "token=$3" "$url/login"; }
# fac_login ADDRESS NAME PASSWORD
fac_login() { "${C[@]}" --interface "$1" -o "$t/body" -w '%{http_code}' -H "Origin: $url" \
        --data-urlencode "name=$2" --data-urlencode "password=$3" "$url/facilitator/login"; }
# mcp ADDRESS SEAT [CURL ARGS]: an MCP initialize; the status code.
printf '%s' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' >"$t/init.json"
mcp() { "${C[@]}" --interface "$1" -o "$t/body" -w '%{http_code}' -X POST -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' --data-binary "@$t/init.json" "${@:3}" "$url/mcp/$2"; }
calls() { grep -c "^status $1 $2" "$t/seatd.calls"; }

# 1. Successes cost nothing: 8 logins from one address, login_rate_per_address = 2.
codes=()
for _ in $(seq 1 8); do codes+=("$(login 127.0.0.2 "$S1" "$tok1")"); done
[[ " ${codes[*]} " == " 303 303 303 303 303 303 303 303 " ]] &&
        ok "8 successful logins from one address (login_rate_per_address = 2): never refused: ${codes[*]}" ||
        not_ok "successful logins from one address: ${codes[*]}"

# 2. Failures cost: 403 until the bucket is empty, then 429 (seatd not asked), for the
# right token too; another address is not touched.
codes=()
for i in 1 2 3; do codes+=("$(login 127.0.0.3 "$S2" "$(printf '%064d' "$i")")"); done
[[ " ${codes[*]} " == " 403 403 429 " ]] && grep -q "this address" "$t/body" && [[ $(calls "$S2" denied) == 2 ]] &&
        ok "failed logins from one address: ${codes[*]} (the 3rd never reaches seatd)" || not_ok "failed logins: ${codes[*]}, seatd saw $(calls "$S2" denied)"
code=$(login 127.0.0.3 "$S1" "$tok1")
[[ $code == 429 ]] && ok "the address that failed twice waits, even with a right token (429)" || not_ok "a right token after 2 failures: $code"
code=$(login 127.0.0.4 "$S2" "$tok2")
[[ $code == 303 ]] && ok "another address logs in to the same seat (303)" || not_ok "another address: $code"

# 3. Bearer-less MCP requests: a bucket of their own (4 a minute).
codes=()
for _ in $(seq 1 5); do codes+=("$(mcp 127.0.0.5 "$S1")"); done
[[ " ${codes[*]} " == " 401 401 401 401 429 " ]] &&
        ok "bearer-less MCP requests: 401, then 429 past mcp_unauthenticated_rate_per_address = 4: ${codes[*]}" ||
        not_ok "bearer-less MCP requests: ${codes[*]}"
code=$(login 127.0.0.5 "$S1" "$tok1")
[[ $code == 303 ]] && ok "after them, a login from the same address still works (303)" || not_ok "a login after bearer-less MCP requests: $code"
code=$(mcp 127.0.0.3 "$S1")
[[ $code == 401 ]] && ok "an address whose logins are spent still gets 401, not 429, for a bearer-less request" ||
        not_ok "bearer-less request from a spent address: $code"

# 4. An MCP session's token is a login: a wrong one costs, the right one does not.
codes=()
for _ in $(seq 1 5); do codes+=("$(mcp 127.0.0.6 "$S1" -H "authorization: Bearer $tok1")"); done
[[ " ${codes[*]} " != *" 429 "* && " ${codes[*]} " != *" 401 "* ]] &&
        ok "5 MCP sessions opened with the right token from one address: none refused by the limit: ${codes[*]}" ||
        not_ok "MCP sessions with the right token: ${codes[*]}"
codes=()
for _ in $(seq 1 3); do codes+=("$(mcp 127.0.0.7 "$S1" -H "authorization: Bearer $tok2")"); done
[[ " ${codes[*]} " == " 401 401 429 " ]] && ok "MCP sessions with a wrong token: ${codes[*]}" || not_ok "MCP sessions, wrong token: ${codes[*]}"

# 5. A seat's bucket emptied from elsewhere (2 a minute): two addresses, a wrong token each.
codes=()
for a in 127.0.0.10 127.0.0.11; do codes+=("$(login "$a" "$S3" "$(printf '%064d' 7)")"); done
[[ " ${codes[*]} " == " 403 403 " ]] || not_ok "emptying seat $S3's bucket: ${codes[*]}"
code=$(login 127.0.0.11 "$S3" "$(printf '%064d' 8)")
[[ $code == 429 ]] && grep -q "this seat" "$t/body" && ok "seat's bucket empty: an address that failed within the minute is refused for the seat (429)" ||
        not_ok "a failed address on the emptied seat: $code"
code=$(login 127.0.0.12 "$S3" "$tok3")
[[ $code == 303 ]] && ok "seat's bucket empty: its participant still logs in from an address with a full bucket (303)" ||
        not_ok "the seat's own token while its bucket is empty: $code"
code=$(login 127.0.0.12 "$S3" "$tok3")
[[ $code == 303 ]] && ok "and again: the staked bucket came back whole" || not_ok "the seat's token again: $code"
code=$(login 127.0.0.13 "$S3" "$(printf '%064d' 9)")
code2=$(login 127.0.0.13 "$S1" "$tok1")
[[ $code == 403 && $code2 == 429 ]] && grep -q "this address" "$t/body" &&
        ok "a wrong token on the emptied seat from a fresh address: 403, and that address has lost its whole bucket (429 on any seat)" ||
        not_ok "a wrong token on the emptied seat: $code, then $code2"

# 6. Facilitators: only failures cost too (2 a minute per address and per name); the name's
# limit has no relief.
codes=()
for _ in $(seq 1 4); do codes+=("$(fac_login 127.0.0.30 alice "fac pw")"); done
[[ " ${codes[*]} " == " 303 303 303 303 " ]] &&
        ok "4 facilitator logins from one address (facilitator_login_rate_per_address = 2): never refused: ${codes[*]}" ||
        not_ok "facilitator logins: ${codes[*]}"
codes=()
for _ in $(seq 1 3); do codes+=("$(fac_login 127.0.0.31 alice wrong)"); done
[[ " ${codes[*]} " == " 403 403 429 " ]] && ok "wrong facilitator passwords from one address: ${codes[*]}" || not_ok "wrong facilitator passwords: ${codes[*]}"
codes=()
for a in 127.0.0.32 127.0.0.33 127.0.0.34; do codes+=("$(fac_login "$a" bob wrong)"); done
code=$(fac_login 127.0.0.35 bob "bob pw")
[[ " ${codes[*]} " == " 403 403 429 " && $code == 429 ]] && grep -q "for this facilitator name" "$t/body" &&
        ok "a facilitator name guessed from many addresses: ${codes[*]}, its password too (429: no relief for a password)" ||
        not_ok "a facilitator name from many addresses: ${codes[*]}, then $code"

kill -0 "$web_pid" 2>/dev/null && kill -0 "$fake_pid" 2>/dev/null && ok "seat-web serves on (and the scripted seatd)" ||
        not_ok "seat-web or the scripted seatd exited: $(tail -3 "$t/web.log") $(tail -3 "$t/seatd.err")"
tap_end
