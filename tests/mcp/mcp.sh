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
#   - every tool call is in the sealed audit log with its name, arguments and client.
# The participant's side runs as nobody, through the participant socket as shipped.
#   usage: mcp.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
need_built "$SEATD" "$CTL" "$SIGN" "$GUEST_INIT"
need_root
need_cmd setpriv python3
need_libvirt
here=$(cd "$(dirname "$0")" && pwd)
need_npm_client "$here" @modelcontextprotocol/sdk host_install_mcp_client

harness_workdir /var/tmp/seatd-mcp 0755
unset SEATD_TOKEN
seatd_start_sealing

"$CTL" -q --json provision --image test-image --participant agent >"$t/prov" 2>"$t/out" || bail "provision failed: $(cat "$t/out")"
S=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seats"][0]["id"])' "$t/prov")
tok=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seats"][0]["token"])' "$t/prov")
token_file "$t/token1" "$tok" nobody:nogroup 0600
diag "seat $S"

# ---------------------------------------------------------------- 1. the SDK's client
# client.mjs runs "SEATCTL --token-file F mcp ARGS SEAT": here SEATCTL is a wrapper that
# runs seatctl as nobody. client SCENARIO TOKEN_FILE: its lines become TAP.
cat >"$t/seatctl-as-nobody" <<EOF
#!/bin/sh
exec setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CTL" "\$@"
EOF
chmod 0755 "$t/seatctl-as-nobody"
client() {
        local line
        node "$here/client.mjs" "$1" "$t/seatctl-as-nobody" "$S" "$2" --user 65534 "${@:3}" \
                >"$t/client-$1" 2>"$t/client-$1.err" </dev/null
        while IFS= read -r line; do
                case $line in
                "ok - "*) ok "${line#ok - }" ;;
                "not ok - "*) : >"$t/out"; not_ok "${line#not ok - }" ;;
                "#"*) echo "$line" ;;
                esac
        done <"$t/client-$1"
        grep -q "^ok - \|^not ok - " "$t/client-$1" || { cp "$t/client-$1.err" "$t/out"; not_ok "client.mjs $1 ran"; }
}
client main "$t/token1"

# upload and download: only beneath --transfer-dir (nobody's directory here).
mkdir -p "$t/xfer"
head -c 1500000 /dev/urandom >"$t/xfer/a.bin"
ln -s /etc/shadow "$t/xfer/escape"
ln -s /etc "$t/xfer/sub"
chown -h nobody:nogroup "$t/xfer" "$t/xfer/a.bin" "$t/xfer/escape" "$t/xfer/sub"
XFER=$t/xfer client transfer "$t/token1" --transfer-dir "$t/xfer"

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
        sleep 4 # the exec has started by then (seatd logs it)
) | cat "$t/vanish.in" - | {
        SEATD_TOKEN= timeout 60 "$t/seatctl-as-nobody" --token-file "$t/token1" mcp --user 65534 "$S" >"$t/vanish.out" 2>"$t/vanish.err"
        echo $? >"$t/vanish.rc"
}
"$CTL" exec "$S" -- ps -o args >"$t/ps" 2>"$t/out"
if [[ $(cat "$t/vanish.rc") == 0 ]] && ! grep -qx "sleep 3002" "$t/ps" && grep -qF 'argv=["sleep" "3002"]' "$t/seatd.log"; then
        ok "a client that vanishes mid-call: seatctl mcp exits 0, the exec ran and is gone from the guest"
else
        cat "$t/vanish.err" "$t/ps" >"$t/out"
        not_ok "a client that vanishes mid-call (rc $(cat "$t/vanish.rc"))"
fi
"$CTL" exec "$S" -- true >"$t/out" 2>&1 && ok "the seat stays usable after it" || not_ok "the seat stays usable after it"

# ---------------------------------------------------------------- 3. reset
"$CTL" --json reset "$S" >"$t/reset" 2>"$t/out" || bail "reset failed: $(cat "$t/out")"
tok2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["token"])' "$t/reset")
token_file "$t/token2" "$tok2" nobody:nogroup 0600
client refused "$t/token1"
client volatile "$t/token2"

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
sdk = [r["data"]["tool"] for r in starts if r["data"]["tool"].get("client") == "seatd-tests/1.0.0"]
assert sdk, "no call of the SDK's client"
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
        ok "the sealed audit log holds every MCP tool call: name, arguments with their BLAKE2b, client, guest user, its end (the cancelled sleep 'cancelled'); seat_status as a tool.call"
else
        not_ok "the sealed audit log holds every MCP tool call"
fi
tap_end
