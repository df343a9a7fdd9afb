#!/usr/bin/env bash
# guest-init-stdio.sh: drive `guest-init-host --stdio` with agent protocol frames and check
# its replies (docs/protocol-agent.md). Speaks TAP. Plain bash + coreutils, no jq.
#   usage: guest-init-stdio.sh PATH/TO/guest-init-host
set -uo pipefail

bin=${1:?usage: $0 PATH/TO/guest-init-host}
[[ -x $bin ]] || { echo "1..0 # SKIP $bin not built"; exit 0; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - $1"
	cut -c1-300 "$tmp/out" | sed "s/^/# out: /" | head -40
	sed 's/^/# err: /' "$tmp/err" | head -20
}
check() { # description, then a command that must succeed
	local desc=$1
	shift
	if "$@" >/dev/null 2>&1; then ok "$desc"; else not_ok "$desc"; fi
}

HELLO='{"type":"hello","id":1,"version":1}'

# Frames on stdin (one per argument), replies in $tmp/out. guest-init exits after EOF once
# every exec has finished.
run() {
	local -a opts=()
	while [[ ${1:-} == --* ]]; do opts+=("$1" "$2"); shift 2; done
	printf '%s\n' "$@" | timeout 30 "$bin" --stdio --log-level debug "${opts[@]}" >"$tmp/out" 2>"$tmp/err"
	echo $? >"$tmp/rc"
}
# The reply lines with this id and type.
reply() { grep -E "\"id\":$1[,}]" "$tmp/out" | grep -F "\"type\":\"$2\""; }
has() { grep -qF -- "$3" <<<"$(reply "$1" "$2")"; }
b64() { printf '%s' "$1" | base64 -w0; }
# All stdout data of an exec, decoded.
stdout_of() {
	reply "$1" output | grep -F '"stream":"stdout"' | sed 's/.*"data":"\([^"]*\)".*/\1/' |
		while read -r d; do printf '%s' "$d" | base64 -d; done
}
exited_cleanly() { [[ $(cat "$tmp/rc") == 0 ]]; }
# Gone, or a zombie waiting for whoever reaps orphans here.
dead() { [[ -n $1 ]] && { [[ ! -e /proc/$1 ]] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }; }

# ---- hello and the hello gate
run '{"type":"exec","id":7,"argv":["/bin/true"]}' '{"type":"ping","id":8}' "$HELLO" \
	'{"type":"hello","id":9,"version":2}'
check "exec before hello is refused with state" has 7 error '"code":"state"'
check "ping before hello is answered" has 8 pong uptime_ms
check "hello reply: version 1" has 1 hello '"version":1'
check "hello reply: agent name" has 1 hello '"agent":"guest-init '
check "hello reply: capabilities" has 1 hello '"capabilities":["exec","stream","stdin","kill","file_put","file_get","configure","shutdown","ping","pty","tcp"]'
check "hello reply: limits" has 1 hello '"max_frame":1048576'
check "hello version 2 is unsupported_version" has 9 error '"code":"unsupported_version"'
check "exits 0 at EOF" exited_cleanly

# ---- exec
run "$HELLO" '{"type":"exec","id":2,"argv":["/bin/echo","hello world"]}' \
	'{"type":"exec","id":3,"argv":["sh","-c","echo oops >&2; exit 3"]}' \
	'{"type":"exec","id":4,"argv":["/nonexistent/tool"]}' \
	'{"type":"exec","id":5,"argv":["sh","-c","pwd; echo $FOO; id -u"],"cwd":"/tmp","env":["FOO=bar","PATH=/usr/bin:/bin"]}'
check "echo: started with a pid" has 2 started '"pid":'
check "echo: stdout streamed" test "$(stdout_of 2)" = "hello world"
check "echo: exit code 0" has 2 exit '"code":0,'
check "echo: stdout_bytes" has 2 exit '"stdout_bytes":12'
check "nonzero exit code" has 3 exit '"code":3,'
check "stderr streamed" has 3 output "\"stream\":\"stderr\",\"data\":\"$(b64 $'oops\n')\""
check "missing program: started" has 4 started '"pid":'
check "missing program: exit 127 with the reason" has 4 exit '"code":127,'
check "missing program: error names it" has 4 exit "execve '/nonexistent/tool': No such file or directory"
check "cwd and env applied" test "$(stdout_of 5)" = "$(printf '/tmp\nbar\n%s' "$(id -u)")"

# ---- bad frames never stop the agent
big=$(head -c 70000 /dev/zero | tr '\0' 'x')
run --max-frame 65536 "$HELLO" 'this is not json' '{"type":"frobnicate","id":3}' \
	"{\"type\":\"ping\",\"id\":4,\"pad\":\"$big\"}" '{"type":"exec","id":5}' '[1,2]' \
	'{"type":"ping","id":6}'
check "malformed frame: error malformed, id 0" has 0 error '"code":"malformed"'
check "unknown type: unknown_type with its id" has 3 error '"code":"unknown_type"'
check "oversize frame: too_large, id 0" has 0 error '"code":"too_large"'
check "missing argv: invalid" has 5 error '"code":"invalid"'
check "still serving afterwards" has 6 pong uptime_ms
check "no crash" exited_cleanly

# ---- stdin
run "$HELLO" "{\"type\":\"exec\",\"id\":2,\"argv\":[\"cat\"],\"stdin\":\"$(b64 abc)\"}" \
	'{"type":"exec","id":3,"argv":["cat"],"stdin_eof":false}' \
	"{\"type\":\"stdin\",\"id\":4,\"exec\":3,\"data\":\"$(b64 'more ')\",\"eof\":false}" \
	"{\"type\":\"stdin\",\"id\":5,\"exec\":3,\"data\":\"$(b64 'data')\",\"eof\":true}" \
	"{\"type\":\"stdin\",\"id\":6,\"exec\":99,\"data\":\"\",\"eof\":true}"
check "stdin given with exec" test "$(stdout_of 2)" = abc
check "stdin requests answered ok" has 4 ok '"id":4'
check "streamed stdin reaches the tool" test "$(stdout_of 3)" = "more data"
check "stdin for an unknown exec: not_found" has 6 error '"code":"not_found"'

# ---- timeouts, kill, output cap, process groups, limits
run --max-execs 4 "$HELLO" '{"type":"exec","id":2,"argv":["sleep","10"],"timeout_ms":300}' \
	'{"type":"exec","id":3,"argv":["sleep","10"]}' \
	'{"type":"kill","id":4,"exec":3,"signal":15}' \
	'{"type":"kill","id":5,"exec":42}' \
	'{"type":"exec","id":6,"argv":["sh","-c","head -c 100000 /dev/zero"],"max_output":1000}' \
	'{"type":"exec","id":7,"argv":["sh","-c","sleep 30 & echo $!"]}'
check "timeout: timed_out and SIGKILL" has 2 exit '"code":-1,"signal":9'
check "timeout: timed_out true" has 2 exit '"timed_out":true'
check "kill: ok" has 4 ok '"id":4'
check "kill: the exec died of SIGTERM" has 3 exit '"signal":15'
check "kill unknown exec: not_found" has 5 error '"code":"not_found"'
check "max_output: truncated" has 6 exit '"truncated":true'
check "max_output: everything counted" has 6 exit '"stdout_bytes":100000'
sent=$(reply 6 output | sed 's/.*"data":"\([^"]*\)".*/\1/' | while read -r d; do printf '%s' "$d" | base64 -d; done | wc -c)
check "max_output: at most 1000 bytes sent" test "$sent" -le 1000
bgpid=$(stdout_of 7)
check "process group: exit arrives" has 7 exit '"code":0,'
check "process group: the background child was killed" dead "$bgpid"

# (the first runs until the kill after the two that must find it running: no time assumed)
run --max-execs 1 "$HELLO" '{"type":"exec","id":2,"argv":["sleep","30"]}' \
	'{"type":"exec","id":2,"argv":["true"]}' '{"type":"exec","id":3,"argv":["true"]}' \
	'{"type":"kill","id":4,"exec":2,"signal":15}'
check "duplicate running id: state" has 2 error '"code":"state"'
check "max_execs: limit" has 3 error '"code":"limit"'

# ---- files
f=$tmp/file.txt
run --max-file 100 "$HELLO" \
	"{\"type\":\"file_put\",\"id\":2,\"path\":\"$f\",\"offset\":0,\"data\":\"$(b64 'hello ')\",\"mode\":384}" \
	"{\"type\":\"file_put\",\"id\":3,\"path\":\"$f\",\"offset\":6,\"data\":\"$(b64 'world')\",\"final\":true}" \
	"{\"type\":\"file_put\",\"id\":4,\"path\":\"$f\",\"offset\":3,\"data\":\"$(b64 'x')\"}" \
	"{\"type\":\"file_get\",\"id\":5,\"path\":\"$f\",\"offset\":0,\"length\":4096}" \
	"{\"type\":\"file_get\",\"id\":6,\"path\":\"$f\",\"offset\":6,\"length\":2}" \
	"{\"type\":\"file_get\",\"id\":7,\"path\":\"$tmp/nope\",\"offset\":0,\"length\":10}" \
	'{"type":"file_get","id":8,"path":"relative/path","offset":0,"length":10}' \
	"{\"type\":\"file_put\",\"id\":9,\"path\":\"$f\",\"offset\":11,\"data\":\"$(head -c 100 /dev/zero | base64 -w0)\"}"
check "file_put: ok with size" has 3 ok '"size":11'
check "file_put: content on disk" test "$(cat "$f")" = "hello world"
check "file_put: mode applied" test "$(stat -c %a "$f")" = 600
check "file_put: wrong offset is invalid" has 4 error '"code":"invalid"'
check "file_get: whole file, eof" has 5 data "\"data\":\"$(b64 'hello world')\""
check "file_get: eof true at the end" has 5 data '"eof":true'
check "file_get: partial chunk, not eof" has 6 data '"eof":false'
check "file_get: size" has 6 data '"size":11'
check "file_get: missing file is not_found" has 7 error '"code":"not_found"'
check "file_get: relative path is invalid" has 8 error '"code":"invalid"'
check "file_put: beyond max_file is limit" has 9 error '"code":"limit"'

# a FIFO must never block the (single-threaded) agent; procfs files report size 0
mkfifo "$tmp/fifo"
run "$HELLO" "{\"type\":\"file_get\",\"id\":2,\"path\":\"$tmp/fifo\",\"offset\":0,\"length\":10}" \
	"{\"type\":\"file_put\",\"id\":3,\"path\":\"$tmp/fifo\",\"offset\":0,\"data\":\"$(b64 x)\"}" \
	'{"type":"file_get","id":4,"path":"/proc/self/status","offset":0,"length":100000}' \
	'{"type":"ping","id":5}'
check "file_get on a FIFO: refused, no hang" has 2 error '"code":"invalid"'
check "file_put on a FIFO: refused, no hang" has 3 error '"code"'
check "file_get on procfs: data, eof" has 4 data '"eof":true'
check "still serving after FIFOs" has 5 pong uptime_ms

# ---- shutdown outside PID 1: reply, then exit
run "$HELLO" '{"type":"exec","id":2,"argv":["sleep","30"]}' '{"type":"shutdown","id":3,"action":"poweroff"}' \
	'{"type":"ping","id":4}'
check "shutdown: ok" has 3 ok '"id":3'
check "shutdown: exits 0" exited_cleanly

echo "1..$n"
((failed == 0))
