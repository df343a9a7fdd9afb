#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# mcp.sh: `seatctl mcp` against a private seatd and a real seat (TCG), driven by the
# official MCP TypeScript SDK (client.mjs, pinned in package-lock.json, installed by
# scripts/lib/host.sh: host_install_mcp_client). Speaks TAP.
#   - the SDK's client: tools and schemas, exec with streamed progress, files, bad
#     arguments, cancellation (the sleep dies in the guest), the guest user's permissions,
#     upload and download beneath --transfer-dir only;
#   - raw JSON-RPC on stdin: malformed lines, requests before initialize, an oversized
#     line, a client that vanishes mid-call (its exec is killed, the seat stays usable);
#   - after a reset: the old token is refused, the first session's files are gone;
#   - every tool call is in the sealed audit log with its name, arguments and client;
#   - over Streamable HTTP: seat-web as it ships (its own user, TLS from --self-signed)
#     serves /mcp/SEAT; the SDK's StreamableHTTPClientTransport runs the same scenarios with
#     the token as a bearer (node trusts the certificate through NODE_EXTRA_CA_CERTS), a
#     wrong token and another seat's token are refused, a session open across a reset is
#     ended with a clear error; curl sends what a client should not (no or a garbage bearer,
#     an oversized body, another Origin, unknown sessions, plain HTTP); no seatctl mcp child
#     outlives its session or seat-web; a client blocked past seat-web's idle_timeout still
#     has its next call answered (seat-web says how long it keeps an idle connection).
# The participant's side runs as nobody, through the participant socket as shipped.
#   usage: mcp.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
WEB=$build/web/seat-web
need_built "$SEATD" "$CTL" "$SIGN" "$GUEST_INIT" "$WEB"
need_root
need_cmd setpriv python3 curl
need_libvirt
here=$(cd "$(dirname "$0")" && pwd)
need_npm_client "$here" @modelcontextprotocol/sdk host_install_mcp_client

harness_workdir /var/tmp/seatd-mcp 0755
unset SEATD_TOKEN
seatd_start_sealing

"$CTL" -q --json provision --image test-image --participant agent --count 2 >"$t/prov" 2>"$t/out" || bail "provision failed: $(cat "$t/out")"
read -r S tok S2 tokS2 < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["seats"]; print(s[0]["id"], s[0]["token"], s[1]["id"], s[1]["token"])' "$t/prov")
token_file "$t/token1" "$tok" nobody:nogroup 0600
token_file "$t/token-other" "$tokS2" nobody:nogroup 0600
token_file "$t/token-wrong" "$(printf '%s' "$tok" | tr 0-9a-f 1-9a-f0)" nobody:nogroup 0600
diag "seat $S (and $S2, for the other-seat checks over HTTP)"

# ---------------------------------------------------------------- 1. the SDK's client
# client.mjs runs "SEATCTL --token-file F mcp ARGS SEAT": here SEATCTL is a wrapper that
# runs seatctl as nobody. client SCENARIO TOKEN_FILE: its lines become TAP.
cat >"$t/seatctl-as-nobody" <<EOF
#!/bin/sh
exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CTL" "\$@"
EOF
chmod 0755 "$t/seatctl-as-nobody"
# forward_port's port carries seatctl mcp's own user's connections only (issue 35, finding
# 3): client.mjs (root) finds its own refused, and reaches the service through CONNECT_AS,
# which prints what 127.0.0.1:PORT sends to a connection made as nobody.
cat >"$t/read-port.py" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
data = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    data += d
sys.stdout.write(data.decode(errors="replace"))
EOF
cat >"$t/connect-as-nobody" <<EOF
#!/bin/sh
exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$t/read-port.py" "\$1"
EOF
chmod 0644 "$t/read-port.py"
chmod 0755 "$t/connect-as-nobody"
export CONNECT_AS=$t/connect-as-nobody
client() {
        local prefix=
        [[ -n ${MCP_URL-} ]] && prefix="HTTP: "
        node "$here/client.mjs" "$1" "$t/seatctl-as-nobody" "$S" "$2" --user 65534 "${@:3}" \
                >"$t/client-$1" 2>"$t/client-$1.err" </dev/null
        # (the HTTP-only scenarios name their checks "HTTP: ..." themselves)
        tap_relay "$t/client-$1" "$prefix" "client.mjs $1"
}
client main "$t/token1"

# upload and download: only beneath --transfer-dir (nobody's directory here).
mkdir -p "$t/xfer"
head -c 1500000 /dev/urandom >"$t/xfer/a.bin"
ln -s /etc/shadow "$t/xfer/escape"
ln -s /etc "$t/xfer/sub"
chown -h nobody:nogroup "$t/xfer" "$t/xfer/a.bin" "$t/xfer/escape" "$t/xfer/sub"
XFER=$t/xfer client transfer "$t/token1" --transfer-dir "$t/xfer"

# ---------------------------------------------------------------- 1b. over Streamable HTTP
# seat-web as it ships: its own user (here nobody), TLS with the pair --self-signed makes,
# seatd through the participant socket; each MCP session runs this build's seatctl mcp
# (as the tools' user 65534, as above).
port=$((20000 + RANDOM % 20000))
webconf() { seat_web_conf "$@" "seatctl=$CTL" mcp_user=65534; }
idle=10 # seat-web closes a connection idle this long (its default, said here for the checks)
webconf "$t/web.conf" listen_port=$port idle_timeout=$idle login_rate_per_address=100 login_rate_per_seat=100 mcp_sessions_per_seat=3
as_nobody "$WEB" -c "$t/web.conf" --self-signed >"$t/self" 2>"$t/out" || bail "seat-web --self-signed failed: $(cat "$t/out")"
# setpriv itself in the background (not the as_nobody function): $! is seat-web.
setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$t/web.conf" -l debug >"$t/web.log" 2>&1 &
web_pid=$!
harness_on_exit 'kill_wait $web_pid; [[ -f $t/web.log ]] && cp $t/web.log $build/mcp-seat-web.log'
base=https://127.0.0.1:$port
wait_until 'curl -s -o /dev/null --cacert "$t/web/tls/cert.pem" "$base/" || ! kill -0 "$web_pid"'
export NODE_EXTRA_CA_CERTS=$t/web/tls/cert.pem

MCP_URL=$base/mcp/$S client main "$t/token1"
MCP_URL=$base/mcp/$S WRONG_TOKEN_FILE=$t/token-wrong client wrong-token "$t/token1"
MCP_URL=$base/mcp/$S OTHER_URL=$base/mcp/$S2 OTHER_TOKEN_FILE=$t/token-other client other-seat "$t/token1"
MCP_URL=$base/mcp/$S IDLE_S=$idle client pause "$t/token1"

# curl: what a client should not send. mcp URL BODY-FILE [CURL ARGS...]: the status code;
# the headers in $t/hdrs, the body in $t/body.
mcp() {
        local u=$1 b=$2
        shift 2
        curl -s --cacert "$t/web/tls/cert.pem" -o "$t/body" -D "$t/hdrs" -w '%{http_code}' -X POST \
                -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' --data-binary "@$b" "$@" "$u"
}
u=$base/mcp/$S
bearer="authorization: Bearer $tok"
printf '%s' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}' >"$t/init.json"
printf '%s' '{"jsonrpc":"2.0","id":2,"method":"ping"}' >"$t/ping.json"
code=$(mcp "$u" "$t/init.json")
[[ $code == 401 ]] && grep -qi '^www-authenticate: Bearer' "$t/hdrs" && grep -q '"error"' "$t/body" &&
        ok "HTTP: no bearer token: 401 with WWW-Authenticate: Bearer and a JSON-RPC error" || { cp "$t/body" "$t/out"; not_ok "HTTP: no bearer: $code"; }
for a in 'Bearer not-a-token!!' 'Bearer ' "Basic $(printf 'agent:%s' "$tok" | base64 -w0)" "Bearer $tok $tok" "Bearer ${tok^^}"; do
        code=$(mcp "$u" "$t/init.json" -H "authorization: $a")
        [[ $code == 401 ]] && ok "HTTP: authorization '${a:0:16}...': 401" || not_ok "HTTP: authorization '${a:0:16}...': $code"
done
head -c 2000000 /dev/zero | tr '\0' ' ' >"$t/big.json"
code=$(mcp "$u" "$t/big.json" -H "$bearer")
[[ $code == 413 ]] && grep -q "at most 1048576 bytes" "$t/body" && ok "HTTP: a 2 MB body: 413, naming the cap" || not_ok "HTTP: a 2 MB body: $code"
code=$(mcp "$u" "$t/init.json" -H "$bearer" -H "origin: https://evil.example")
[[ $code == 403 ]] && ok "HTTP: another site's Origin: 403 (DNS rebinding)" || not_ok "HTTP: another Origin: $code"
code=$(mcp "$u" "$t/init.json" -H "$bearer" -H "origin: http://127.0.0.1:$port")
[[ $code == 403 ]] && ok "HTTP: an http:// Origin on the TLS server: 403" || not_ok "HTTP: http Origin: $code"
code=$(mcp "$u" "$t/ping.json" -H "$bearer" -H "mcp-session-id: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
[[ $code == 404 ]] && ok "HTTP: an unknown Mcp-Session-Id: 404" || not_ok "HTTP: unknown session: $code"
code=$(mcp "$u" "$t/ping.json" -H "$bearer")
[[ $code == 400 ]] && grep -q "send 'initialize' first" "$t/body" && ok "HTTP: a request without a session: 400, saying to initialize" || not_ok "HTTP: no session: $code"
code=$(mcp "$u" "$t/init.json" -H "$bearer" -H 'content-type: text/plain')
[[ $code == 415 ]] && ok "HTTP: a body that is not application/json: 415" || not_ok "HTTP: text/plain: $code"
grep -qix "keep-alive: timeout=$idle"$'\r' "$t/hdrs" &&
        ok "HTTP: a response that keeps its connection says for how long (keep-alive: timeout=$idle, seat-web's idle_timeout)" ||
        { cp "$t/hdrs" "$t/out"; not_ok "HTTP: no keep-alive hint"; }
code=$(curl -s --cacert "$t/web/tls/cert.pem" -o /dev/null -w '%{http_code}' -H "$bearer" "$u")
[[ $code == 405 ]] && ok "HTTP: GET (no server-sent stream): 405" || not_ok "HTTP: GET: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "$bearer" -H 'content-type: application/json' --data-binary "@$t/init.json" "http://127.0.0.1:$port/mcp/$S")
[[ $code != 2* ]] && ok "HTTP: plain HTTP to the TLS port: no answer ($code)" || not_ok "HTTP: plain HTTP to the TLS port: $code"
webconf "$t/plain-wide.conf" listen_address=0.0.0.0 listen_port=$((port + 1)) plain_http=true
as_nobody "$WEB" -c "$t/plain-wide.conf" >"$t/out" 2>&1 && not_ok "plain HTTP on 0.0.0.0 started" ||
        { grep -q "plain_http = true needs a loopback" "$t/out" && ok "HTTP: plain HTTP on a non-loopback address: seat-web refuses to start" || not_ok "plain HTTP off loopback: $(cat "$t/out")"; }

# A session opened with curl: its id, then the hostile cases against it.
code=$(mcp "$u" "$t/init.json" -H "$bearer")
sid=$(sed -n 's/^mcp-session-id: *\([A-Za-z0-9_-]*\).*/\1/Ip' "$t/hdrs")
[[ $code == 200 && ${#sid} == 43 ]] && grep -q '^content-type: text/event-stream' "$t/hdrs" && grep -q '^data: .*"protocolVersion":"2025-11-25"' "$t/body" &&
        ok "HTTP: initialize with curl: an event stream with the result, a 43-character Mcp-Session-Id" || { cat "$t/hdrs" "$t/body" >"$t/out"; not_ok "HTTP: initialize with curl: $code"; }
child=$(grep -o "seat '$S' started: seatctl mcp pid [0-9]*" "$t/web.log" | tail -1 | grep -o '[0-9]*$')
code=$(mcp "$u" "$t/ping.json" -H "$bearer" -H "mcp-session-id: $sid" -H 'mcp-protocol-version: 1999-01-01')
[[ $code == 400 ]] && grep -q "MCP-Protocol-Version" "$t/body" && ok "HTTP: an unsupported MCP-Protocol-Version: 400" || not_ok "HTTP: bad protocol version: $code"
code=$(mcp "$u" "$t/ping.json" -H "authorization: Bearer $tokS2" -H "mcp-session-id: $sid")
[[ $code == 401 ]] && ok "HTTP: the session's id with another seat's token: 401" || not_ok "HTTP: session id, other token: $code"
code=$(mcp "$base/mcp/$S2" "$t/ping.json" -H "authorization: Bearer $tokS2" -H "mcp-session-id: $sid")
[[ $code == 404 ]] && ok "HTTP: the session's id on another seat's URL: 404" || not_ok "HTTP: session id on another seat: $code"
code=$(mcp "$u" "$t/ping.json" -H "$bearer" -H "mcp-session-id: $sid" -H 'mcp-protocol-version: 2025-11-25')
[[ $code == 200 ]] && grep -q '^data: {"jsonrpc":"2.0","id":2,"result":{}}' "$t/body" && ok "HTTP: ping in the session: its result as an event" || { cp "$t/body" "$t/out"; not_ok "HTTP: ping: $code"; }
code=$(curl -s --cacert "$t/web/tls/cert.pem" -o /dev/null -w '%{http_code}' -X DELETE -H "$bearer" -H "mcp-session-id: $sid" "$u")
wait_until '[[ -z $child ]] || ! kill -0 "$child" 2>/dev/null'
[[ $code == 200 && -n $child ]] && ! kill -0 "$child" 2>/dev/null && ok "HTTP: DELETE ends the session: its seatctl mcp (pid $child) is gone" || not_ok "HTTP: DELETE: $code, child '$child'"
code=$(mcp "$u" "$t/ping.json" -H "$bearer" -H "mcp-session-id: $sid")
[[ $code == 404 ]] && ok "HTTP: the ended session's id: 404" || not_ok "HTTP: ended session: $code"
# The cap of sessions per seat (3 here).
for i in 1 2 3 4; do codes[i]=$(mcp "$u" "$t/init.json" -H "$bearer"); sids[i]=$(sed -n 's/^mcp-session-id: *\([A-Za-z0-9_-]*\).*/\1/Ip' "$t/hdrs"); done
[[ ${codes[*]} == "200 200 200 503" ]] && ok "HTTP: a fourth session of one seat: 503 (mcp_sessions_per_seat = 3)" || not_ok "HTTP: session cap: ${codes[*]}"
for i in 1 2 3; do curl -s --cacert "$t/web/tls/cert.pem" -o /dev/null -X DELETE -H "$bearer" -H "mcp-session-id: ${sids[i]}" "$u"; done
"$CTL" release "$S2" >"$t/out" 2>&1 || diag "release of $S2 failed: $(cat "$t/out")"

# ---------------------------------------------------------------- 2. raw JSON-RPC
# rpc NAME: the lines of $t/NAME.in to seatctl mcp (as nobody), its replies in $t/NAME.out.
rpc() {
        SEATD_TOKEN= "$t/seatctl-as-nobody" --token-file "$t/token1" mcp --user 65534 "$S" <"$t/$1.in" >"$t/$1.out" 2>"$t/$1.err"
}
# reply NAME ID: the reply to that id, as JSON (python).
reply_has() { # NAME PYTHON-EXPR over r (the list of replies)
        python3 - "$t/$1.out" "$2" <<'PY' >"$t/out" 2>&1
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
by = {str(m.get("id")): m for m in r}
ok = eval(sys.argv[2])
print(json.dumps(r)[:1500])
sys.exit(0 if ok else 1)
PY
}
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}'
{
        echo '{"jsonrpc":"2.0","id":0,"method":"tools/list"}'
        echo "$init"
        echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
        echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"'
        echo '[{"jsonrpc":"2.0","id":3,"method":"ping"}]'
        printf '{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"%s"}}\n' "$(head -c 5000000 /dev/zero | tr '\0' a)"
        echo '{"jsonrpc":"2.0","id":5,"method":"resources/list"}'
        echo '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"exec","arguments":{"argv":["true"],"timeout_ms":-5}}}'
        echo '{"jsonrpc":"1.0","id":7,"method":"ping"}'
        echo "$init" | sed 's/"id":1/"id":8/'
        echo '{"jsonrpc":"2.0","id":9,"method":"ping"}'
} >"$t/bad.in"
rpc bad
reply_has bad 'by["0"]["error"]["code"] == -32600 and "initialize" in by["0"]["error"]["message"]' &&
        ok "a request before initialize: -32600, saying to initialize first" || not_ok "a request before initialize: -32600"
reply_has bad 'by["1"]["result"]["protocolVersion"] == "2025-11-25"' &&
        ok "initialize: protocol revision 2025-11-25" || not_ok "initialize: protocol revision 2025-11-25"
reply_has bad 'sum(1 for m in r if m.get("id") is None and m["error"]["code"] == -32700) == 1' &&
        ok "a malformed line: -32700 Parse error (id null)" || not_ok "a malformed line: -32700"
reply_has bad 'any(m.get("id") is None and "batches" in m["error"]["message"] for m in r)' &&
        ok "a batch: refused, saying batches are not supported" || not_ok "a batch: refused"
reply_has bad 'any(m.get("id") is None and "over 4194304 bytes" in m["error"]["message"] for m in r) and "4" not in by' &&
        ok "a 5 MB line: -32600, the line dropped whole" || not_ok "a 5 MB line: -32600, dropped"
reply_has bad 'by["5"]["error"]["code"] == -32601' && ok "an unknown method: -32601" || not_ok "an unknown method: -32601"
reply_has bad 'by["6"]["error"]["code"] == -32602 and "timeout_ms" in by["6"]["error"]["message"]' &&
        ok "exec with timeout_ms -5: -32602 naming timeout_ms" || not_ok "exec with timeout_ms -5: -32602"
reply_has bad 'any(m.get("id") is None and "jsonrpc" in m["error"]["message"] for m in r)' &&
        ok "jsonrpc 1.0: -32600" || not_ok "jsonrpc 1.0: -32600"
reply_has bad 'by["8"]["error"]["code"] == -32600 and by["9"]["result"] == {}' &&
        ok "a second initialize: refused; the session goes on (ping answered)" || not_ok "a second initialize refused, ping after"

# A client that vanishes mid-call: stdin closes while its exec sleeps; seatctl mcp cancels
# it (seatd kills its process group in the guest) and exits.
{
        echo "$init"
        echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"exec","arguments":{"argv":["sleep","3002"]}}}'
} >"$t/vanish.in"
(
        # stdin stays open until the exec runs: seatd logs it, then the guest's ps shows it
        wait_until 'grep -qF '\''argv=["sleep" "3002"]'\'' "$t/seatd.log" &&
                grep -qx "sleep 3002" <<<"$("$CTL" exec "$S" -- ps -o args 2>/dev/null)"'
) | cat "$t/vanish.in" - | {
        SEATD_TOKEN= timeout 300 "$t/seatctl-as-nobody" --token-file "$t/token1" mcp --user 65534 "$S" >"$t/vanish.out" 2>"$t/vanish.err"
        echo $? >"$t/vanish.rc"
}
# Calls on a seat run side by side: the look may come before the cancellation reached the
# guest, so it looks again until the sleep is gone (a minute at most).
for _ in $(seq 1 120); do
        "$CTL" exec "$S" -- ps -o args >"$t/ps" 2>"$t/out"
        grep -qx "sleep 3002" "$t/ps" || break
        sleep 0.5
done
if [[ $(cat "$t/vanish.rc") == 0 ]] && ! grep -qx "sleep 3002" "$t/ps" && grep -qF 'argv=["sleep" "3002"]' "$t/seatd.log"; then
        ok "a client that vanishes mid-call: seatctl mcp exits 0, the exec ran and is gone from the guest"
else
        cat "$t/vanish.err" "$t/ps" >"$t/out"
        not_ok "a client that vanishes mid-call (rc $(cat "$t/vanish.rc"))"
fi
"$CTL" exec "$S" -- true >"$t/out" 2>&1 && ok "the seat stays usable after it" || not_ok "the seat stays usable after it"

# ---------------------------------------------------------------- 3. reset
# Run by the HTTP client, across one of its sessions (its next call is refused, saying why).
# A second session, opened with curl, sends nothing after the reset: seat-web's own check
# of idle sessions (every 30 s) ends it and kills its seatctl mcp all the same.
code=$(mcp "$u" "$t/init.json" -H "$bearer")
sid_idle=$(sed -n 's/^mcp-session-id: *\([A-Za-z0-9_-]*\).*/\1/Ip' "$t/hdrs")
child_idle=$(grep -o "seat '$S' started: seatctl mcp pid [0-9]*" "$t/web.log" | tail -1 | grep -o '[0-9]*$')
MCP_URL=$base/mcp/$S RESET_CMD="SEATD_SOCKET='$SEATD_SOCKET' '$CTL' --json reset '$S' >'$t/reset' 2>'$t/reset.err'" client reset "$t/token1"
[[ -s $t/reset ]] || "$CTL" --json reset "$S" >"$t/reset" 2>"$t/out" || bail "reset failed: $(cat "$t/out") $(cat "$t/reset.err" 2>/dev/null)"
for _ in $(seq 1 900); do [[ -n $child_idle ]] && kill -0 "$child_idle" 2>/dev/null || break; sleep 0.1; done
code=$(mcp "$u" "$t/ping.json" -H "$bearer" -H "mcp-session-id: $sid_idle")
[[ -n $child_idle ]] && ! kill -0 "$child_idle" 2>/dev/null && [[ $code == 401 ]] && grep -q "was reset or released" "$t/body" &&
        ok "HTTP: a session idle across the reset: ended by seat-web's own check (its seatctl mcp gone), its next request 401 saying why" ||
        { cp "$t/body" "$t/out"; not_ok "HTTP: a session idle across the reset: child '$child_idle', $code"; }
tok2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$t/reset")
token_file "$t/token2" "$tok2" nobody:nogroup 0600
client refused "$t/token1"
client volatile "$t/token2"
MCP_URL=$base/mcp/$S client volatile "$t/token2"

# seat-web stops with a session open: no seatctl mcp of its sessions is left.
code=$(mcp "$u" "$t/init.json" -H "authorization: Bearer $tok2")
open_child=$(grep -o "seat '$S' started: seatctl mcp pid [0-9]*" "$t/web.log" | tail -1 | grep -o '[0-9]*$')
[[ $code == 200 && -n $open_child ]] && kill -0 "$open_child" 2>/dev/null || diag "no open session before the stop ($code, '$open_child')"
kill_wait "$web_pid"
left=
for p in $web_pid $(grep -o "seatctl mcp pid [0-9]*" "$t/web.log" | grep -o '[0-9]*$'); do kill -0 "$p" 2>/dev/null && left+=" $p"; done
[[ -z $left && -n $open_child ]] && grep -q "seat-web: info: stopped" "$t/web.log" &&
        ok "HTTP: seat-web stopped with a session open: it and all its $(grep -c "seatctl mcp pid" "$t/web.log") seatctl mcp children are gone" ||
        not_ok "HTTP: seat-web stopped: left:$left (open session's child '$open_child')"
web_pid=

# ---------------------------------------------------------------- 4. the sealed audit log
"$CTL" release "$S" >"$t/out" 2>&1 || bail "release failed: $(cat "$t/out")"
for _ in $(seq 1 1800); do [[ -n $(ls "$t/state/evidence/archives/$S-g1-"*.seatdev 2>/dev/null) ]] && break; sleep 0.1; done
a1=$(ls "$t/state/evidence/archives/$S-g1-"*.seatdev 2>/dev/null | head -1)
: >"$t/out"
if [[ -n $a1 ]] && "$CTL" evidence open "$a1" --key "$t/facilitator.key" --out "$t/open1" --host-key "$t/state/trust/host.pub" >>"$t/out" 2>&1 &&
        python3 - "$(ls "$t/open1/"*audit* | head -1)" >>"$t/out" 2>&1 <<'PY'; then
import hashlib, json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["type"] == "exec.start" and "tool" in r["data"]]
names = {r["data"]["tool"]["name"] for r in starts}
assert {"exec", "read_file", "write_file", "list_directory"} <= names, names
calls = [r["data"] for r in recs if r["type"] == "tool.call"]
assert any(c["tool"]["name"] == "seat_status" and c["method"] == "seat.status" and c["status"] == "ok"
           and c["tool"]["client"] == "seatd-tests/1.0.0" for c in calls), ("seat_status is a tool.call", calls)
assert any(c["tool"]["name"] == "forward_port" and c["method"] == "seat.forward" and c["port"] == 7100
           and c["host"] == "127.0.0.1" for c in calls), ("forward_port is a tool.call", calls)
fstarts = {r["seq"]: r["data"] for r in recs if r["type"] == "forward.start" and r["data"]["port"] == 7100}
fends = [r["data"] for r in recs if r["type"] == "forward.end" and r["data"]["start"] in fstarts]
assert fstarts and fends, ("the forwarded connection's forward.start and forward.end", fstarts, fends)
sdk = [r["data"]["tool"] for r in starts if r["data"]["tool"].get("client") == "seatd-tests/1.0.0"]
assert sdk, "no call of the SDK's client"
http = {r["data"]["tool"]["name"] for r in starts if r["data"]["tool"].get("client") == "seatd-tests-http/1.0.0"}
assert {"exec", "read_file", "write_file", "list_directory"} <= http, ("the calls over Streamable HTTP", http)
note = [t for t in sdk if t["name"] == "write_file" and "/tmp/mcp-note.txt" in t["arguments"]]
assert note, "the write_file call with its path"
t = note[0]
assert t["arguments_blake2b"] == hashlib.blake2b(t["arguments"].encode(), digest_size=64).hexdigest(), t
assert not t["arguments_truncated"] and t["arguments_bytes"] == len(t["arguments"].encode()), t
ends = {r["data"]["start"]: r["data"] for r in recs if r["type"] == "exec.end"}
for r in starts:
    assert r["seq"] in ends, ("every MCP exec has its end", r)
    assert r["data"]["guest_uid"] == 65534, r
sleep = [r for r in starts if r["data"]["argv"] == ["sleep", "3001"]]
assert sleep and ends[sleep[0]["seq"]]["status"] == "cancelled", (sleep, [ends.get(s["seq"]) for s in sleep])
print(len(starts), "tool calls in the sealed log")
PY
        ok "the sealed audit log holds every MCP tool call, over stdio and over HTTP: name, arguments with their BLAKE2b, client, guest user, its end (the cancelled sleep 'cancelled'); seat_status and forward_port as tool.calls, the forwarded connection's records"
else
        not_ok "the sealed audit log holds every MCP tool call"
fi
tap_end
