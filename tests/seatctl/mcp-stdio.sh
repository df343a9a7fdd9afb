#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# seatctl mcp's session without a seat (its tools against a socket where no seatd runs):
# the JSON-RPC edges, and many tool calls at once on their threads (this suite also runs
# under ThreadSanitizer). The tools against a real seat, with the SDK: tests/mcp/mcp.sh.
# usage: mcp-stdio.sh /path/to/seatctl
set -u
CTL=${1:?usage: mcp-stdio.sh SEATCTL}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_workdir /tmp/seatctl-mcp
unset SEATD_SOCKET SEATD_TOKEN

# session NAME SECONDS: the lines of $t/NAME.in, then stdin held open for SECONDS (the calls
# answer) before it closes; replies in $t/NAME.out.
session() { # NAME SECONDS [OPTIONS...]
        { cat "$t/$1.in"; sleep "$2"; } | "$CTL" --socket "$t/nonexistent.sock" mcp "${@:3}" s1 >"$t/$1.out" 2>"$t/$1.err"
        echo $? >"$t/$1.rc"
}
# expect NAME DESCRIPTION PYTHON: r is the list of replies, by maps str(id) to a reply.
expect() {
        if python3 - "$t/$1.out" "$3" >"$t/out" 2>&1 <<'PY'; then ok "$2"; else not_ok "$2"; diag_file "$t/out"; fi
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
by = {str(m.get("id")): m for m in r}
if not eval(sys.argv[2]):
    print(json.dumps(r)[:3000]); sys.exit(1)
PY
}
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'

{
        echo '{"jsonrpc":"2.0","id":"p","method":"ping"}'
        echo "$init"
        echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
        echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
        echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"exec","arguments":{"command":"true"}}}'
        echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"seat_status"}}'
        echo '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/x","content":"!!","encoding":"base64"}}}'
        echo '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":"/","x":{}}}}'
        echo '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'
        echo '{"jsonrpc":"2.0","id":7,"result":{}}'
        printf '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"seat_status","_meta":{"progressToken":"%s"}}}\n' "$(head -c 300 /dev/zero | tr '\0' t)"
} >"$t/basic.in"
session basic 2
[[ $(cat "$t/basic.rc") == 0 ]] && ok "seatctl mcp exits 0 when its client closes stdin" || not_ok "seatctl mcp exits 0 at EOF (got $(cat "$t/basic.rc"))"
expect basic "ping before initialize is answered" 'by["p"]["result"] == {}'
expect basic "initialize: the client's revision 2024-11-05 is taken (it is supported)" 'by["1"]["result"]["protocolVersion"] == "2024-11-05" and by["1"]["result"]["capabilities"] == {"tools": {"listChanged": False}}'
expect basic "tools/list: six tools (forward_port among them), each with input and output schemas" 'len(by["2"]["result"]["tools"]) == 6 and any(x["name"] == "forward_port" for x in by["2"]["result"]["tools"]) and all("inputSchema" in x and "outputSchema" in x for x in by["2"]["result"]["tools"])'
expect basic "a tool call with seatd away: a tool error saying seatd is not running" 'by["3"]["result"]["isError"] and "seatd is not running" in by["3"]["result"]["content"][0]["text"] and by["4"]["result"]["isError"]'
expect basic "write_file with bad base64: -32602" 'by["5"]["error"]["code"] == -32602 and "base64" in by["5"]["error"]["message"]'
expect basic "an unknown argument: -32602 naming it" "by['6']['error']['code'] == -32602 and \"'x'\" in by['6']['error']['message']"
expect basic "a progress token over 256 bytes: -32602 (it would be echoed in every notification)" 'by["8"]["error"]["code"] == -32602 and "progressToken" in by["8"]["error"]["message"]'
expect basic "an object as id: -32600 (id null); a response from the client: ignored" 'any(m["id"] is None and m["error"]["code"] == -32600 for m in r) and "7" not in by and len(r) == 9'

# --no-forward-port (seat-web's children): forward_port is neither listed nor callable.
{
        echo "$init"
        echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
        echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"forward_port","arguments":{"host":"127.0.0.1","port":80}}}'
} >"$t/nofwd.in"
session nofwd 1 --no-forward-port
expect nofwd "--no-forward-port: five tools, forward_port not among them, and calling it is an unknown tool" 'len(by["2"]["result"]["tools"]) == 5 and not any(x["name"] == "forward_port" for x in by["2"]["result"]["tools"]) and by["3"]["error"]["code"] == -32602'

# Twenty calls at once: at most eight run, the others are told the server is busy; every
# request gets exactly one reply.
{
        echo "$init"
        for i in $(seq 10 29); do
                echo '{"jsonrpc":"2.0","id":'"$i"',"method":"tools/call","params":{"name":"exec","arguments":{"argv":["true"]},"_meta":{"progressToken":'"$i"'}}}'
        done
        echo '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":12}}'
        echo '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"no-such"}}'
} >"$t/many.in"
session many 3
expect many "20 calls at once: each answered at most once, all but a cancelled one answered, busy ones with -32000" \
        'sorted(str(m["id"]) for m in r if m["id"] != 1) == sorted(set(str(m["id"]) for m in r if m["id"] != 1)) and len([m for m in r if m["id"] != 1]) >= 19 and all(("result" in m and m["result"]["isError"]) or m["error"]["code"] == -32000 for m in r if m["id"] != 1)'

# The client goes away with calls in flight: seatctl mcp cancels and waits for them.
{ echo "$init"; for i in 1 2 3 4 5; do echo '{"jsonrpc":"2.0","id":"e'"$i"'","method":"tools/call","params":{"name":"exec","arguments":{"argv":["true"]}}}'; done; } >"$t/eof.in"
session eof 0
[[ $(cat "$t/eof.rc") == 0 ]] && ok "EOF with calls in flight: seatctl mcp waits for its threads and exits 0" || not_ok "EOF with calls in flight (rc $(cat "$t/eof.rc"))"

"$CTL" mcp </dev/null >"$t/out" 2>&1; [[ $? == 2 ]] && grep -q "usage: seatctl" "$t/out" && ok "seatctl mcp without SEAT: usage, status 2" || not_ok "seatctl mcp without SEAT: usage, status 2"
"$CTL" mcp --user root s1 </dev/null >"$t/out" 2>&1; [[ $? == 2 ]] && grep -q "UID or UID:GID" "$t/out" && ok "--user root: refused, status 2, saying what it takes" || not_ok "--user root: refused"
tap_end
