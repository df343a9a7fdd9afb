#!/usr/bin/env bash
# lifecycle.sh: the seat lifecycle end to end against a private seatd and real VMs:
# provision, exec, cp, console, participant tokens, many seats, reset, release, seatd
# and libvirtd dying underneath, bad input. Speaks TAP.
#   usage: lifecycle.sh BUILD_DIR
# Builds and signs its own test image; every domain and process it makes is removed on
# exit (also on failure). Needs root, libvirtd (started here when it is not running),
# qemu-img and setpriv. Restarts libvirtd once (case "libvirtd restarted").
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite lifecycle
need_cmd virsh libvirtd qemu-img setpriv python3

# nobody cannot reach a python under /root (pyenv): take the system's.
SYSPY=/usr/bin/python3
[[ -x $SYSPY ]] || SYSPY=$(command -v python3)
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || skip_all "no user nobody / group nogroup"
need_libvirt --start

harness_seatd_must_live=1
bg_pids=()
# (libvirtd again first, should the suite have ended while it was restarted)
harness_on_exit 'kill_wait "${bg_pids[@]}"; libvirt_start'
t_start=$(date +%s)

unset SEATD_TOKEN
mkdir -p "$t/nobody"
# The facilitator's box key: every finished session is sealed to it.
"$SIGN" keygen --box -p "$t/facilitator.pub" -s "$t/facilitator.key" >/dev/null 2>&1 || bail "seat-sign keygen --box failed"
chmod 0777 "$t/nobody"
seatd_conf accel=tcg allow_tcg=true inspect_images=false "facilitator_key=$t/facilitator.pub"
guestfs_cache_shared

# Every exec that reaches a seat goes through x (root) or xn (nobody with a token file), so
# the audit log can be held against the list of calls made.
x() { local s=$1; [[ $s == --* ]] && s=$3; echo "$s $*" >>"$t/calls"; "$CTL" exec "$@"; }
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CTL" "$@"; }
xn() { local tok=$1 s=$2; shift 2; echo "$s $s $*" >>"$t/calls"; nobody --token-file "$tok" exec "$s" "$@"; }
# A token file nobody can read and nobody else; every token issued is kept, to look for in the log.
participant_token() { token_file "$1" "$2" nobody:nogroup 0600; echo "$2" >>"$t/all-tokens"; }
state_of() { "$CTL" --json status "$1" 2>/dev/null | json_field 'd["state"]' 2>/dev/null; }
listed_ids() { "$CTL" --json list | json_field '"\n".join(s["id"] for s in d["seats"])'; }
seat_dirs() { ls -1 "$t/state/seats" 2>/dev/null | sort; }
# A finished session of seat $1 is kept: still in the quarantine, or sealed into an archive.
kept() { [[ -n $(ls -d "$t/state/evidence/quarantine/$1-g"* "$t/state/evidence/archives/$1-g"*.seatdev 2>/dev/null) ]]; }

# A protocol-level client for the error codes (seatctl prints only the messages).
cat >"$t/ctl.py" <<'PY'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ.get("CTL_SOCKET") or os.environ["SEATD_SOCKET"])
f = s.makefile("rwb")
def call(i, method, params):
    f.write((json.dumps({"id": i, "method": method, "params": params}) + "\n").encode()); f.flush()
    while True:
        m = json.loads(f.readline())
        if m.get("id") == i and m.get("type") in ("result", "error"):
            return m
call(1, "hello", {"version": 1})
m = call(2, sys.argv[1], json.loads(sys.argv[2]))
print(m["type"], m.get("error", {}).get("code", ""), m.get("error", {}).get("message", ""))
PY
chmod 0644 "$t/ctl.py"

# The host's /usr/local/bin, to prove later that a guest writing there leaves it alone.
host_usr_local() { { ls -la --time-style=full-iso /usr/local/bin; find /usr/local/bin -type f -exec sha256sum {} + | sort; } 2>&1 | sha256sum; }
usr_local_before=$(host_usr_local)

# ---------------------------------------------------------------- setup: a signed image
seatd_start
image_import
blobs_sum() { find "$t/state/images/blobs" -type f -print0 | sort -z | xargs -0 sha256sum; }
blobs_before=$(blobs_sum)
echo "# image built, signed and imported ($(($(date +%s) - t_start)) s)"

# ---------------------------------------------------------------- 1. provision, list, status
"$CTL" -q provision --image test-image --participant alice >"$t/prov" 2>"$t/out"
rc=$?
A=$(awk 'NR==2 {print $1}' "$t/prov") tokA=$(awk 'NR==2 {print $2}' "$t/prov")
cat "$t/prov" >>"$t/out"
[[ $rc == 0 && $A =~ ^s[0-9a-f]{8}$ && $tokA =~ ^[0-9a-f]{64}$ ]] && ok "provision prints a seat id ($A) and a 64-hex token" \
  || { not_ok "provision prints a seat id and a 64-hex token"; bail "no seat to test with"; }
participant_token "$t/tokA" "$tokA"
check_cmd "list shows the seat READY" bash -c "'$CTL' list | grep -E '^$A +ready +test-image +1 +1 .*alice'"
check_cmd "status shows the seat READY" bash -c "'$CTL' status $A | grep -E '^$A +ready '"
check_cmd "list --json and status --json parse, with state, image and domain" bash -c "
  '$CTL' --json list | python3 -c 'import json,sys; d=json.load(sys.stdin); s=[x for x in d[\"seats\"] if x[\"id\"]==\"$A\"][0]; assert s[\"state\"]==\"ready\" and s[\"image\"]==\"test-image\" and s[\"domain\"].startswith(\"seatd-$A-g\") and s[\"reset_mode\"]==\"cold\" and s[\"participant\"]==\"alice\", s' &&
  '$CTL' --json status $A | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"id\"]==\"$A\" and d[\"state\"]==\"ready\" and d[\"generation\"]==1, d'"

# ---------------------------------------------------------------- 2. exec
x "$A" -- sh -c 'echo to-out; echo to-err >&2; exit 3' >"$t/o" 2>"$t/e"
rc=$?
{ echo "rc=$rc"; echo "stdout:"; cat "$t/o"; echo "stderr:"; cat "$t/e"; } >"$t/out"
[[ $rc == 3 && $(cat "$t/o") == to-out && $(cat "$t/e") == to-err ]] && ok "exec: stdout and stderr land on their own fds, exit code 3 passes through" \
  || not_ok "exec: stdout and stderr land on their own fds, exit code 3 passes through"

# (4 s apart in the guest, 1.5 s asked for here: a loaded host may deliver the first late)
x "$A" -- sh -c 'echo first; sleep 4; echo second' | while IFS= read -r l; do echo "$(date +%s%N) $l"; done >"$t/stream"
cp "$t/stream" "$t/out"
gap=$(awk '{ts[$2]=$1} END {printf "%d", (ts["second"] - ts["first"]) / 1000000}' "$t/stream")
[[ $(awk '{print $2}' "$t/stream" | tr '\n' ' ') == "first second " && $gap -ge 1500 ]] \
  && ok "exec: output streams while the command runs (lines ${gap} ms apart)" || not_ok "exec: output streams while the command runs (gap ${gap} ms)"

# seatctl's own options may follow the verb; what follows '--' is the command's, flags too.
x "$A" --json -- sh -c 'echo "args: $*"; exit 4' sh --json -q >"$t/o" 2>"$t/out"; rc=$?
cat "$t/o" >>"$t/out"
[[ $rc == 4 ]] && grep -qx -- "args: --json -q" "$t/o" && python3 -c 'import json,sys; d=json.loads(sys.stdin.read().split("\n",1)[1]); assert d["code"] == 4' <"$t/o" \
  && ok "exec SEAT --json -- CMD --json -q: seatctl's JSON result, the command gets its own flags, status 4" \
  || not_ok "exec SEAT --json -- CMD --json -q (got $rc)"
x "$A" -- sh -c 'kill -KILL $$' >"$t/out" 2>&1; rc=$?
[[ $rc == 137 ]] && ok "exec: a command killed by SIGKILL gives 128+9" || not_ok "exec: a command killed by SIGKILL gives 128+9 (got $rc)"
x "$A" -- sh -c 'kill -TERM $$' >"$t/out" 2>&1; rc=$?
[[ $rc == 143 ]] && ok "exec: a command killed by SIGTERM gives 128+15" || not_ok "exec: a command killed by SIGTERM gives 128+15 (got $rc)"

s0=$(date +%s%N)
x --timeout 2 "$A" -- sh -c 'sleep 301 & sleep 302 & sleep 303' >"$t/out" 2>&1; rc=$?
ms=$((($(date +%s%N) - s0) / 1000000))
# (well under the sleeps' 301 s: the timeout ended it; a minute allows a loaded host)
[[ $rc == 124 && $ms -lt 60000 ]] && ok "exec --timeout 2 gives 124 (after $ms ms)" || not_ok "exec --timeout 2 gives 124 (got $rc after $ms ms)"
x "$A" -- ps >"$t/out" 2>&1
if grep -q "ps" "$t/out" && ! grep -qE "sleep 30[123]" "$t/out"; then ok "after the timeout the command's whole process group is gone in the guest"
else not_ok "after the timeout the command's whole process group is gone in the guest"; fi
# Interrupting seatctl cancels the exec: the guest's process group is killed, the seat stays
# usable. (SIGTERM: a background job of a script has SIGINT ignored, as a shell sets it up.)
# seatctl is interrupted once the command runs in the guest (its ps shows it); the group
# is looked for until it is gone (up to 120 s), then once more for the check.
echo "$A $A -- sh -c sleep 401 & sleep 402" >>"$t/calls"
"$CTL" exec "$A" -- sh -c 'sleep 401 & sleep 402' >"$t/out" 2>&1 &
cpid=$!
wait_until '[[ $(x "$A" -- ps 2>/dev/null) == *"sleep 402"* ]] || ! kill -0 "$cpid" 2>/dev/null'
kill -TERM "$cpid"; wait "$cpid" 2>/dev/null
wait_until '[[ $(x "$A" -- ps 2>/dev/null) != *"sleep 40"[12]* ]]'
x "$A" -- sh -c 'ps; echo ps-done' >"$t/out" 2>&1
if grep -q "ps-done" "$t/out" && ! grep -qE "sleep 40[12]" "$t/out" && [[ $("$CTL" --json status "$A" | json_field 'd["state"]') == ready ]]; then
  ok "seatctl exec interrupted (SIGTERM): the command's process group is killed in the guest, the seat stays READY"
else not_ok "seatctl exec interrupted (SIGTERM): the command's process group is killed in the guest, the seat stays READY"; fi

out=$(echo x | x "$A" -- cat 2>"$t/out")
[[ $out == x ]] && ok "exec forwards stdin (echo x | seatctl exec S -- cat)" || not_ok "exec forwards stdin (got '$out')"
head -c 300000 /dev/urandom >"$t/stdin.bin"
out=$(x "$A" -- sha256sum <"$t/stdin.bin" 2>"$t/out" | awk '{print $1}')
[[ $out == "$(sha256sum <"$t/stdin.bin" | awk '{print $1}')" ]] && ok "exec forwards 300 KB of binary stdin intact" || not_ok "exec forwards 300 KB of binary stdin intact"

x "$A" -- /no/such/program >"$t/o" 2>"$t/out"; rc=$?
[[ $rc == 127 ]] && grep -q "/no/such/program.*No such file or directory" "$t/out" && [[ ! -s $t/o ]] \
  && ok "exec of a missing program: exit 127 and a clear error ($(head -1 "$t/out"))" || not_ok "exec of a missing program: exit 127 and a clear error (rc $rc)"

# ---------------------------------------------------------------- 3. cp, console
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$t/big"
sum_big=$(sha256sum <"$t/big" | awk '{print $1}')
check_cmd "cp a 3 MiB file (7 chunks) into the seat" "$CTL" cp "$t/big" "$A:/root/big.bin"
out=$(x "$A" -- sha256sum /root/big.bin 2>"$t/out" | awk '{print $1}')
[[ $out == "$sum_big" ]] && ok "the copy in the guest has the same sha256" || not_ok "the copy in the guest has the same sha256 ($out)"
"$CTL" cp "$A:/root/big.bin" "$t/big.back" >"$t/out" 2>&1
[[ -f $t/big.back && $(sha256sum <"$t/big.back" | awk '{print $1}') == "$sum_big" ]] && ok "cp the file back out: same sha256" || not_ok "cp the file back out: same sha256"
"$CTL" cp "$A:/no/such/file" "$t/nothing" >"$t/out" 2>&1; rc=$?
[[ $rc == 1 && ! -e $t/nothing ]] && [[ -z $(find "$t" -maxdepth 1 -name 'nothing.seatctl-*') ]] \
  && ok "cp of a missing guest file fails and leaves no local file" || not_ok "cp of a missing guest file fails and leaves no local file"

x "$A" -- sh -c 'printf "console-marker-lc\033[31mRED\007end\n" >/dev/console; echo "<2>kmsg-marker-lc" >/dev/kmsg' >"$t/out" 2>&1
wait_until '"$CTL" console "$A" >"$t/console" 2>&1; grep -q "kmsg-marker-lc" "$t/console"'
cp "$t/console" "$t/out"
grep -q 'kmsg-marker-lc' "$t/console" && grep -qF 'console-marker-lc\x1b[31mRED\x07end' "$t/console" \
  && ok "console prints the serial log (a /dev/console and a /dev/kmsg line)" || not_ok "console prints the serial log"
! grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$t/console" && ok "console escapes control characters by default" || not_ok "console escapes control characters by default"
"$CTL" console --raw "$A" >"$t/out" 2>&1
grep -q $'console-marker-lc\x1b\\[31mRED\x07end' "$t/out" && ok "console --raw passes the bytes through" || not_ok "console --raw passes the bytes through"

# ---------------------------------------------------------------- 5. many seats at once
s0=$(date +%s)
"$CTL" -q --json provision --image test-image --count 4 >"$t/prov4" 2>"$t/out"
rc=$?
mapfile -t many < <(json_field '"\n".join(s["id"] for s in d["seats"])' <"$t/prov4" 2>/dev/null)
mapfile -t many_tok < <(json_field '"\n".join(s["token"] for s in d["seats"])' <"$t/prov4" 2>/dev/null)
cat "$t/prov4" >>"$t/out"
good=1
for i in 0 1 2 3; do [[ ${many[i]:-} =~ ^s[0-9a-f]{8}$ && ${many_tok[i]:-} =~ ^[0-9a-f]{64}$ ]] || good=0; done
[[ $rc == 0 && ${#many[@]} == 4 && $good == 1 && $(printf '%s\n' "${many[@]}" "$A" | sort -u | wc -l) == 5 ]] \
  && ok "provision --count 4 --json: four new seats, distinct ids, each with a token ($(($(date +%s) - s0)) s)" \
  || { not_ok "provision --count 4 --json: four new seats, each with a token"; bail "no seats to go on with"; }
B=${many[0]} C=${many[1]} D=${many[2]} E=${many[3]}
for i in 0 1 2 3; do participant_token "$t/tok.${many[i]}" "${many_tok[i]}"; done
tokB=${many_tok[0]}
check_cmd "all five seats are READY in list" bash -c "[[ \$('$CTL' list | grep -cE '^s[0-9a-f]{8} +ready ') == 5 ]]"

s0=$(date +%s%N)
pids=()
for s in "$A" "${many[@]}"; do
  x "$s" -- sh -c 'sleep 3; hostname' >"$t/host.$s" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
ms=$((($(date +%s%N) - s0) / 1000000))
good=1
: >"$t/out"
for s in "$A" "${many[@]}"; do echo "$s: $(cat "$t/host.$s")" >>"$t/out"; [[ $(cat "$t/host.$s") == "seat-$s" ]] || good=0; done
[[ $good == 1 ]] && ok "concurrent exec in five seats: each sees its own hostname" || not_ok "concurrent exec in five seats: each sees its own hostname"
[[ $ms -lt 9000 ]] && ok "the five 3 s execs ran concurrently (all done in $ms ms, not 15 s)" || not_ok "the five 3 s execs ran concurrently (took $ms ms)"
mid_a=$(x "$A" -- cat /etc/machine-id 2>/dev/null) mid_b=$(x "$B" -- cat /etc/machine-id 2>/dev/null)
[[ $mid_a =~ ^[0-9a-f]{32}$ && $mid_b =~ ^[0-9a-f]{32}$ && $mid_a != "$mid_b" ]] && ok "each seat has its own machine-id" || not_ok "each seat has its own machine-id ($mid_a / $mid_b)"

# ---------------------------------------------------------------- 4. participant tokens
out=$(xn "$t/tokA" "$A" -- id -u 2>"$t/out"); rc=$?
[[ $rc == 0 && $out == 0 ]] && ok "nobody with seat A's token: exec on A works" || not_ok "nobody with seat A's token: exec on A works (rc $rc, '$out')"
nobody --token-file "$t/tokA" status "$A" >"$t/out" 2>&1 && grep -qE "^$A +ready" "$t/out" \
  && ok "nobody with A's token: status on A works" || not_ok "nobody with A's token: status on A works"
nobody --token-file "$t/tokA" console "$A" >"$t/out" 2>&1 && grep -q "kmsg-marker-lc" "$t/out" \
  && ok "nobody with A's token: console on A works" || not_ok "nobody with A's token: console on A works"
head -c 1500000 /dev/urandom >"$t/nobody/in.bin"; chmod 0644 "$t/nobody/in.bin"
nobody --token-file "$t/tokA" cp "$t/nobody/in.bin" "$A:/tmp/from-nobody" >"$t/out" 2>&1 &&
  nobody --token-file "$t/tokA" cp "$A:/tmp/from-nobody" "$t/nobody/out.bin" >>"$t/out" 2>&1 && cmp -s "$t/nobody/in.bin" "$t/nobody/out.bin" \
  && ok "nobody with A's token: cp in and out of A works (1.5 MB, identical)" || not_ok "nobody with A's token: cp in and out of A works"

denied() { # denied DESCRIPTION PATTERN COMMAND...: fails, says why, and did nothing
  local d=$1 pat=$2; shift 2
  if "$@" >"$t/out" 2>&1; then not_ok "$d (it succeeded)"; return; fi
  grep -qE "$pat" "$t/out" && ok "$d" || not_ok "$d (message does not match /$pat/)"
}
NOT_OPEN="this token does not open seat"
# With a token seatctl takes the participant socket, which serves no operator method; the
# image verbs and anything without a token take the operator socket, closed to nobody.
NOT_OP="not served on the participant socket"
NO_SOCK="no permission to talk to seatd"
denied "A's token on seat B: exec denied" "$NOT_OPEN '$B'" nobody --token-file "$t/tokA" exec "$B" -- id
denied "A's token on seat B: status denied" "$NOT_OPEN '$B'" nobody --token-file "$t/tokA" status "$B"
denied "A's token on seat B: console denied" "$NOT_OPEN '$B'" nobody --token-file "$t/tokA" console "$B"
denied "A's token on seat B: cp in denied" "$NOT_OPEN '$B'" nobody --token-file "$t/tokA" cp "$t/nobody/in.bin" "$B:/tmp/x"
denied "A's token on seat B: cp out denied" "$NOT_OPEN '$B'" nobody --token-file "$t/tokA" cp "$B:/etc/hostname" "$t/nobody/x"
denied "A's token on a seat that does not exist: the same answer" "$NOT_OPEN 'sdeadbeef'" nobody --token-file "$t/tokA" status sdeadbeef
denied "A's token: list denied" "$NOT_OP" nobody --token-file "$t/tokA" list
denied "A's token: provision denied" "$NOT_OP" nobody --token-file "$t/tokA" provision --image test-image
denied "A's token: reset of A denied" "$NOT_OP" nobody --token-file "$t/tokA" reset "$A"
denied "A's token: release of A denied" "$NOT_OP" nobody --token-file "$t/tokA" release "$A"
denied "A's token: image list denied" "$NO_SOCK" nobody --token-file "$t/tokA" image list
denied "no token: exec on A denied (the operator socket is closed to nobody)" "$NO_SOCK" nobody exec "$A" -- id
denied "no token: status on A denied" "$NO_SOCK" nobody status "$A"
out=$(CTL_SOCKET=$t/participant.sock setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SYSPY" "$t/ctl.py" seat.exec "{\"seat\": \"$A\", \"argv\": [\"id\"]}" 2>&1)
[[ $out == "error denied $NOT_OPEN '$A'"* ]] && ok "no token on the participant socket: exec on A denied" || not_ok "no token on the participant socket: exec on A denied ($out)"
printf 'not-a-token\n' >"$t/badtok"; chmod 0644 "$t/badtok"
denied "a wrong token: exec on A denied" "$NOT_OPEN '$A'" nobody --token-file "$t/badtok" exec "$A" -- id
out=$(SEATD_TOKEN=$tokA setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$CTL" status "$A" 2>&1)
[[ $out =~ $A\ +ready ]] && ok "the token from \$SEATD_TOKEN works too" || not_ok "the token from \$SEATD_TOKEN works too"
# There is no option that takes the token itself: --token is refused outright (it is not
# read as an abbreviation of --token-file), so the token on argv opens nothing.
denied "a token passed on argv opens nothing" "never taken on the command line" nobody --token "$tokA" exec "$A" -- id
check_cmd "seatctl --help offers no token option but --token-file" bash -c "'$CTL' --help | grep -o -- '--token[a-z-]*' | sort -u | grep -qx -- '--token-file' && [[ \$('$CTL' --help | grep -o -- '--token[a-z-]*' | sort -u | wc -l) == 1 ]]"
out=$(CTL_SOCKET=$t/participant.sock setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$SYSPY" "$t/ctl.py" seat.exec "{\"seat\": \"$B\", \"token\": \"$tokA\", \"argv\": [\"id\"]}" 2>&1)
[[ $out == "error denied "* ]] && ok "protocol: A's token on B is error code 'denied'" || not_ok "protocol: A's token on B is error code 'denied' ($out)"

# ---------------------------------------------------------------- 7a. a tool writes /usr/local/bin
x "$A" -- sh -c 'mkdir -p /usr/local/bin && echo x > /usr/local/bin/pwned-lc' >"$t/out" 2>&1; rc=$?
out=$(x "$A" -- cat /usr/local/bin/pwned-lc 2>>"$t/out")
[[ $rc == 0 && $out == x ]] && ok "a tool writing /usr/local/bin/pwned-lc succeeds inside the guest" || not_ok "a tool writing /usr/local/bin/pwned-lc succeeds inside the guest"
[[ ! -e /usr/local/bin/pwned-lc && $(host_usr_local) == "$usr_local_before" ]] \
  && ok "the host's /usr/local/bin is untouched (listing and checksums equal)" || not_ok "the host's /usr/local/bin is untouched"

# Every tool call is in seatd's log with its argv and how it ended.
logged() { grep -F "exec seat=$1 uid=$2 argv=[$3] cwd=/ stdin=$4 $5" "$t/seatd.log" >/dev/null; }
: >"$t/out"
good=1
logged "$A" 0 '"sh" "-c" "mkdir -p /usr/local/bin && echo x > /usr/local/bin/pwned-lc"' 0 "code=0 signal=0" || { good=0; echo "missing: pwned" >>"$t/out"; }
logged "$A" 0 '"sh" "-c" "echo to-out; echo to-err >&2; exit 3"' 0 "code=3 signal=0" || { good=0; echo "missing: exit 3" >>"$t/out"; }
logged "$A" 0 '"sh" "-c" "kill -KILL $$"' 0 "code=0 signal=9" || logged "$A" 0 '"sh" "-c" "kill -KILL $$"' 0 "code=-1 signal=9" || { good=0; echo "missing: SIGKILL" >>"$t/out"; }
[[ $(grep -F "exec seat=$A uid=0 argv=[\"sh\" \"-c\" \"sleep 301 & sleep 302 & sleep 303\"]" "$t/seatd.log") == *" timed_out"* ]] || { good=0; echo "missing: timeout" >>"$t/out"; }
logged "$A" 0 '"cat"' 2 "code=0" || { good=0; echo "missing: stdin cat" >>"$t/out"; }
logged "$A" 0 '"/no/such/program"' 0 "code=127" || { good=0; echo "missing: missing program" >>"$t/out"; }
logged "$A" 65534 '"id" "-u"' 0 "code=0" || { good=0; echo "missing: nobody's id -u" >>"$t/out"; }
[[ $good == 1 ]] && ok "seatd's log has an 'exec seat=' line per call, with uid, argv and result" || not_ok "seatd's log has an 'exec seat=' line per call, with uid, argv and result"
made=$(grep -c "^$A " "$t/calls") logged_n=$(grep -c "exec seat=$A " "$t/seatd.log")
{ echo "calls made on $A: $made, logged: $logged_n"; grep "^$A " "$t/calls"; grep "exec seat=$A " "$t/seatd.log"; } >"$t/out"
[[ $made == "$logged_n" ]] && ok "no exec on $A went unlogged ($made calls, $logged_n log lines)" || not_ok "no exec on $A went unlogged"

# ---------------------------------------------------------------- 6. reset means a new machine
MARK=canary-$RANDOM$RANDOM
x "$A" -- sh -c "mkdir -p /home /usr/local/bin && for d in / /root /tmp /etc /var /home /usr/local/bin; do echo $MARK > \$d/canary-lc || exit 1; done &&
  dd if=/dev/zero of=/var/big-canary bs=1M count=48 2>/dev/null && echo $MARK >> /var/big-canary &&
  (setsid sleep 7777 </dev/null >/dev/null 2>&1 &) && sleep 1 && sync" >"$t/out" 2>&1
x "$A" -- sh -c "cat /canary-lc /root/canary-lc /tmp/canary-lc /etc/canary-lc /var/canary-lc /home/canary-lc /usr/local/bin/canary-lc; tail -c 100 /var/big-canary; ps | grep 'sleep 777[7]'" >"$t/out" 2>&1
[[ $(grep -c "$MARK" "$t/out") == 8 ]] && grep -q "sleep 7777" "$t/out" \
  && ok "canaries written in the guest: 7 files, a 48 MiB file, a running process" || not_ok "canaries written in the guest"
"$CTL" --json status "$A" >"$t/status.before" 2>&1
"$CTL" reset "$A" >"$t/reset" 2>"$t/out"; rc=$?
new_tokA=$(sed -n 's/^new participant token: //p' "$t/reset")
cat "$t/reset" >>"$t/out"
[[ $rc == 0 && $new_tokA =~ ^[0-9a-f]{64}$ && $new_tokA != "$tokA" ]] && grep -qE "^$A +ready +test-image +1 +2 " "$t/reset" \
  && ok "reset: READY again, generation 2, a new token" || not_ok "reset: READY again, generation 2, a new token"
participant_token "$t/tokA2" "$new_tokA"
x "$A" -- sh -c "for f in /canary-lc /root/canary-lc /tmp/canary-lc /etc/canary-lc /var/canary-lc /home/canary-lc /usr/local/bin/canary-lc /var/big-canary /usr/local/bin/pwned-lc /root/big.bin /tmp/from-nobody; do [ -e \$f ] && echo FOUND \$f; done; grep -rl $MARK /etc /root /var /home /tmp /usr/local 2>/dev/null; ps | grep 'sleep 777[7]'; echo checked" >"$t/out" 2>&1
[[ $(cat "$t/out") == checked ]] && ok "after reset no canary file and no canary process survives" || not_ok "after reset no canary file and no canary process survives"
new_mid=$(x "$A" -- cat /etc/machine-id 2>/dev/null)
[[ $new_mid =~ ^[0-9a-f]{32}$ && $new_mid != "$mid_a" ]] && ok "after reset the machine-id differs" || not_ok "after reset the machine-id differs ($mid_a -> $new_mid)"
denied "after reset the old token no longer opens the seat" "$NOT_OPEN '$A'" nobody --token-file "$t/tokA" exec "$A" -- id
out=$(xn "$t/tokA2" "$A" -- hostname 2>"$t/out")
[[ $out == "seat-$A" ]] && ok "after reset the new token opens it" || not_ok "after reset the new token opens it"
check_cmd "image verify test-image passes after the session" bash -c "'$CTL' image verify test-image | grep -q verified && ! '$CTL' image verify test-image | grep -q 'NOT VERIFIED'"
[[ $(blobs_sum) == "$blobs_before" ]] && ok "the verified base image's blobs have the same sha256 as before" || not_ok "the verified base image's blobs have the same sha256 as before"
# 6b: the session was sealed in the background (libguestfs reads the image's evidence
# paths out of the old overlay: an appliance launch, 10-20 s under TCG): signed by the
# host, encrypted to the facilitator; its quarantine, overlay included, goes after that.
EV=$build/evidence/seat-evidence
arch=
for _ in $(seq 1 2400); do arch=$(ls "$t/state/evidence/archives/$A-g1-"*.seatdev 2>/dev/null | head -1); [[ -n $arch ]] && break; sleep 0.1; done
wait_until '[[ -z $(ls -d "$t/state/evidence/quarantine/$A-g1-"* 2>/dev/null) ]]'
[[ -n $arch && -z $(ls -d "$t/state/evidence/quarantine/$A-g1-"* 2>/dev/null) ]] \
  && ok "the old session is sealed and its quarantine (overlay with the canaries) deleted after that" || { ls -laR "$t/state/evidence" >"$t/out" 2>&1; not_ok "the old session is sealed and its quarantine deleted after that"; }
check_cmd "the reset session is sealed into an archive that seat-evidence verify accepts (host key, seat id)" \
  "$EV" verify "$arch" --host-key "$t/state/trust/host.pub" --seat "$A"
check_cmd "seat-evidence open unpacks it with the facilitator key (every member and the audit chain checked)" \
  "$EV" open "$arch" --host-key "$t/state/trust/host.pub" --key "$t/facilitator.key" --out "$t/opened"
audit=$(ls "$t/opened/"*audit* 2>/dev/null | head -1)
[[ -n $audit ]] && grep -q '"type":"session"' "$audit" && grep -q '"type":"exec.start"' "$audit" && grep -q '"type":"exec.end"' "$audit" && grep -q "$MARK" "$audit" \
  && grep -q '"stdout_blake2b"' "$audit" && grep -q '"type":"end"' "$audit" \
  && ok "the archive's audit log holds the session's tool calls with their argv, results and output digests" \
  || { cp "$audit" "$t/out" 2>/dev/null; not_ok "the archive's audit log holds the session's tool calls"; }
grep -qs "$MARK" "$t/opened/"*-guest_root_canary-lc && ! grep -qE -- '-guest_(etc_|var_|home_|usr_local_bin_)?canary-lc$' <<<"$(ls "$t/opened")" \
  && ok "the archive holds the canary of /root (an evidence path) read from the old disk, not the others" || { ls "$t/opened" >"$t/out" 2>&1; not_ok "the archive holds the canary of /root read from the old disk"; }
cp "$arch" "$t/flipped.seatdev"
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=1; open(p,"wb").write(b)' "$t/flipped.seatdev"
if "$EV" verify "$t/flipped.seatdev" --host-key "$t/state/trust/host.pub" >"$t/out" 2>&1; then not_ok "a flipped byte in the archive is detected"; else ok "a flipped byte in the archive is detected"; fi
if "$EV" verify "$arch" --host-key "$t/state/trust/host.pub" --seat "$B" >"$t/out" 2>&1; then not_ok "the archive is refused as another seat's"; else ok "the archive is refused as another seat's"; fi
# 7b: the seed's acceptance test, last part
x "$A" -- test -e /usr/local/bin/pwned-lc >"$t/out" 2>&1; rc=$?
[[ $rc == 1 ]] && ok "the file the tool wrote in the guest is gone after reset" || not_ok "the file the tool wrote in the guest is gone after reset (rc $rc)"

# ---------------------------------------------------------------- 9. bad input
doms_before=$(seat_domains | sort) dirs_before=$(seat_dirs)
"$CTL" provision --image no-such-image >"$t/out" 2>&1; rc=$?
[[ $rc == 1 ]] && grep -q "no image named 'no-such-image'" "$t/out" && ok "provision of an unknown image: a clear error" || not_ok "provision of an unknown image: a clear error"
[[ $(seat_domains | sort) == "$doms_before" && $(seat_dirs) == "$dirs_before" ]] && ok "... and no domain, no overlay left" || not_ok "... and no domain, no overlay left"
"$CTL" provision --image test-image --participant $'evil\x1b[2J\x07name' >"$t/out" 2>&1; rc=$?
[[ $rc == 1 ]] && grep -q "participant names are at most" "$t/out" && ! grep -q $'\x1b' "$t/out" \
  && ok "a participant name with control characters is refused" || not_ok "a participant name with control characters is refused"
"$CTL" provision --image test-image --participant $'two\nlines' >"$t/out" 2>&1; rc=$?
[[ $rc == 1 && $(seat_domains | sort) == "$doms_before" && $(seat_dirs) == "$dirs_before" ]] \
  && ok "a participant name with a newline is refused; nothing made" || not_ok "a participant name with a newline is refused; nothing made"
out=$(python3 "$t/ctl.py" seat.exec '{"seat": "sdeadbeef", "argv": ["id"]}' 2>&1)
[[ $out == "error not_found "* ]] && ok "exec on an unknown seat: error code not_found" || not_ok "exec on an unknown seat: error code not_found ($out)"
"$CTL" exec sdeadbeef -- id >"$t/out" 2>&1; rc=$?
[[ $rc == 125 ]] && grep -q "no seat 'sdeadbeef'" "$t/out" && ok "seatctl exec on an unknown seat says so (125)" || not_ok "seatctl exec on an unknown seat says so (125; got $rc)"

# ---------------------------------------------------------------- 5b. release
check_cmd "release $E" bash -c "'$CTL' release $E | grep -q 'released $E'"
"$CTL" release "$E" >"$t/out" 2>&1; rc=$?
[[ $rc == 1 ]] && grep -q "no seat '$E'" "$t/out" && ok "release twice: a clear error the second time" || not_ok "release twice: a clear error the second time"
out=$(python3 "$t/ctl.py" seat.release "{\"seat\": \"$E\"}" 2>&1)
[[ $out == "error not_found "* ]] && ok "release of a released seat: error code not_found" || not_ok "release of a released seat: error code not_found ($out)"
check_cmd "release $D" "$CTL" release "$D"
[[ -z $(seat_domains | grep -E "seatd-($D|$E)-g[0-9]+$") && ! -e $t/state/seats/$D && ! -e $t/state/seats/$E ]] \
  && kept "$D" && kept "$E" \
  && ok "released seats: domains gone, seat directories gone, sessions in quarantine or sealed" || not_ok "released seats: domains gone, seat directories gone, sessions in quarantine or sealed"
denied "a released seat's token opens nothing" "$NOT_OPEN '$D'" nobody --token-file "$t/tok.$D" status "$D"

# ---------------------------------------------------------------- 8. faults
# Everything of ours that runs has a seat in list, and every seat directory belongs to one.
consistent() {
  local ids doms dirs
  ids=$(listed_ids | sort) doms=$(seat_domains | sed -E "s/^seatd-//; s/-g[0-9]+$//" | sort) dirs=$(seat_dirs)
  echo "listed: $(echo $ids) / domains: $(echo $doms) / dirs: $(echo $dirs)"
  [[ $doms == "$ids" && $dirs == "$ids" ]] || return 1
  # No seat runs without its network and egress rules; no orphan keeps its network.
  local id q
  for id in $ids; do
    "${VIRSH[@]}" net-info "seatd-$id" >/dev/null 2>&1 && nft list chain inet seatd "out-seat-$id" >/dev/null 2>&1 ||
      { echo "seat $id has no network or no egress rules"; return 1; }
  done
  for q in "$t"/state/evidence/quarantine/*-orphan-*; do
    [[ -e $q ]] || continue
    id=${q##*/} id=${id%%-orphan-*}
    ! "${VIRSH[@]}" net-info "seatd-$id" >/dev/null 2>&1 || { echo "orphan $id kept its network"; return 1; }
    ! nft list chain inet seatd "out-seat-$id" >/dev/null 2>&1 || { echo "orphan $id kept its egress rules"; return 1; }
  done
}
seat_works() { [[ $(x "$1" -- hostname 2>/dev/null) == "seat-$1" ]]; }

# a) SIGKILL while a provision boots its domain
# The new machine's CPUs are paused the moment libvirt reports it started: the guest cannot
# finish booting, so the kill lands while seatd waits for its agent however loaded the host is
# (polling `virsh list` and sleeping lost that race under CI load: the seat was ready first).
# hold_booting EVENTS REGEX: waits (60 s at most) for a seatd domain matching REGEX to start
# in the event log EVENTS, pauses it, and prints its name.
hold_booting() {
  local name=
  for _ in $(seq 1 600); do
    name=$(sed -nE "s/^event 'lifecycle' for domain '($2)': Started.*/\1/p" "$1" | head -1)
    [[ -n $name ]] && break
    sleep 0.1
  done
  [[ -n $name ]] && "${VIRSH[@]}" suspend "$name" >/dev/null 2>&1
  echo "$name"
}
# kill_while_booting EVENTS REGEX OUT SEATCTL-ARGS...: runs seatctl SEATCTL-ARGS (its output
# in OUT) with libvirt's lifecycle events logged to EVENTS, holds the domain matching REGEX
# that it boots (hold_booting) and SIGKILLs seatd. Sets booted (that domain, empty if none
# started) and ctl_rc (seatctl's exit status).
kill_while_booting() {
  local events=$1 re=$2 out=$3 ev_pid ctl_pid
  shift 3
  "${VIRSH[@]}" event --loop --event lifecycle >"$events" 2>&1 &
  ev_pid=$! bg_pids+=("$ev_pid")
  sleep 0.5 # (the event stream is registered)
  "$CTL" -q "$@" >"$out" 2>&1 &
  ctl_pid=$! bg_pids+=("$ctl_pid")
  booted=$(hold_booting "$events" "$re")
  seatd_kill
  wait "$ctl_pid"; ctl_rc=$?
  kill "$ev_pid" 2>/dev/null
}
# settled: no seat's standby machine is being made (warm_reset: each seat boots one beside it,
# named seatd-ID-gN like a seat's own, which a name match would take for the seat's machine).
settled() {
  local s st
  for _ in $(seq 1 900); do
    st=
    for s in $(listed_ids); do
      [[ $("$CTL" --json status "$s" 2>/dev/null | json_field 'd.get("warm_standby", "")' 2>/dev/null) == preparing ]] && st=$s
    done
    [[ -z $st ]] && return 0
    sleep 0.2
  done
  echo "the standby of $st is still being made"; return 1
}
check_cmd "no standby machine is being made (the next new domain is the provision's)" settled
kill_while_booting "$t/events-a" 'seatd-[0-9a-z]+-g[0-9]+' "$t/p8" provision --image test-image
new=$booted prc=$ctl_rc
echo "killed seatd during the provision of ${new:-?} (paused; seatctl provision exited $prc: $(head -c 200 "$t/p8" | tr '\n' ' '))" | tee "$t/out" | sed 's/^/# /'
[[ -n $new && $prc != 0 ]] && ! grep -qE '[0-9a-f]{64}' "$t/p8" \
  && ok "seatd SIGKILLed while provisioning ${new:-?} (domain started, no token handed out)" || not_ok "seatd SIGKILLed while provisioning"
seatd_start
check_cmd "after restart: every seatd-* domain of ours has a seat in list, no orphaned seat directory, network or egress rules; every seat has both" consistent
[[ -n $new ]] && ! grep -qx "$new" <<<"$(seat_domains)" && nid=${new#seatd-}; ls -d "$t/state/evidence/quarantine/${nid%-g*}-orphan-"* >/dev/null 2>&1 \
  && ok "the half-made seat's domain is gone and its files are set aside" || not_ok "the half-made seat's domain is gone and its files are set aside"
good=1; : >"$t/out"
for s in "$A" "$B" "$C"; do [[ $(state_of "$s") == ready ]] && seat_works "$s" || { good=0; echo "$s not adopted/working" >>"$t/out"; }; done
[[ $good == 1 ]] && ok "the READY seats were adopted and answer exec ($A $B $C)" || not_ok "the READY seats were adopted and answer exec"
out=$(xn "$t/tokA2" "$A" -- hostname 2>&1)
[[ $out == "seat-$A" ]] && ok "an adopted seat still takes its participant token" || not_ok "an adopted seat still takes its participant token ($out)"

# b) SIGKILL while a reset boots the new machine (paused as in a)
check_cmd "the adopted seats' standby machines are made (the next $C domain is the reset's)" settled
old_id=$(seat_domains | grep -E "^seatd-$C-g[0-9]+$")
kill_while_booting "$t/events-b" "seatd-$C-g[0-9]+" "$t/r8" reset --cold "$C"
cur=$booted rrc=$ctl_rc
echo "killed seatd during the reset of $C (domain $old_id -> ${cur:-none}, paused; seatctl reset exited $rrc: $(head -c 200 "$t/r8" | tr '\n' ' '))" | tee "$t/out" | sed 's/^/# /'
[[ -n $cur && $cur != "$old_id" && $rrc != 0 ]] && ok "seatd SIGKILLed while resetting $C (new domain booting)" || not_ok "seatd SIGKILLed while resetting $C"
seatd_start
check_cmd "after restart: every seatd-* domain of ours has a seat in list, no orphaned seat directory, network or egress rules; every seat has both" consistent
! grep -qx "$C" <<<"$(listed_ids)" && ! grep -qE "^seatd-$C-g[0-9]+$" <<<"$(seat_domains)" && kept "$C" \
  && ok "the half-reset seat is removed (not adopted), its old session kept in quarantine" || not_ok "the half-reset seat is removed, its old session kept in quarantine"
good=1; : >"$t/out"
for s in "$A" "$B"; do [[ $(state_of "$s") == ready ]] && seat_works "$s" || { good=0; echo "$s not adopted/working" >>"$t/out"; }; done
[[ $good == 1 ]] && ok "the other READY seats were adopted again and answer exec" || not_ok "the other READY seats were adopted again and answer exec"

# c) libvirtd restarted under running seats
lpid=$(pgrep -xo libvirtd)
kill "$lpid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$lpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$lpid" 2>/dev/null && kill -9 "$lpid"
libvirtd -d
wait_until '"${VIRSH[@]}" version >/dev/null 2>&1'
newpid=$(pgrep -xo libvirtd)
[[ -n $newpid && $newpid != "$lpid" ]] && "${VIRSH[@]}" version >/dev/null 2>&1 \
  && ok "libvirtd restarted (pid $lpid -> $newpid)" || not_ok "libvirtd restarted"
[[ $(seat_domains | sed -E 's/-g[0-9]+$//' | sort) == "$(printf 'seatd-%s\n' "$A" "$B" | sort)" ]] && ok "the seats' domains kept running" || not_ok "the seats' domains kept running"
good=1; : >"$t/out"
for s in "$A" "$B"; do seat_works "$s" && [[ $(state_of "$s") == ready ]] || { good=0; echo "$s not working" >>"$t/out"; }; done
[[ $good == 1 ]] && ok "seats keep working through seatd (exec, status)" || not_ok "seats keep working through seatd (exec, status)"
"$CTL" reset "$B" >"$t/resetB" 2>"$t/out"; rc=$?
cat "$t/resetB" >>"$t/out"
new_tokB=$(sed -n 's/^new participant token: //p' "$t/resetB")
# The old machine's destroy finishes beside the new one (nobody waits for it): give libvirt its second.
wait_until '[[ $(seat_domains | grep -c "^seatd-$B-") == 1 ]]'
[[ $rc == 0 && $new_tokB =~ ^[0-9a-f]{64}$ ]] && seat_works "$B" && [[ $(seat_domains | sed -E 's/-g[0-9]+$//' | sort) == "$(printf 'seatd-%s\n' "$A" "$B" | sort)" ]] \
  && ok "reset after the libvirtd restart works (seatd reconnected; old domain gone, new one answers)" || not_ok "reset after the libvirtd restart works"
[[ -n $new_tokB ]] && echo "$new_tokB" >>"$t/all-tokens"
"$CTL" -q provision --image test-image >"$t/prov9" 2>"$t/out"; rc=$?
F=$(awk 'NR==2 {print $1}' "$t/prov9"); awk 'NR==2 {print $2}' "$t/prov9" >>"$t/all-tokens"
[[ $rc == 0 && -n $F ]] && seat_works "$F" && ok "provision after the libvirtd restart works" || not_ok "provision after the libvirtd restart works"

# ---------------------------------------------------------------- the end: release all, no secrets in the log
good=1; : >"$t/out"
for s in "$A" "$B" ${F:+"$F"}; do "$CTL" release "$s" >>"$t/out" 2>&1 || good=0; done
[[ $good == 1 && -z $(seat_domains) && -z $(seat_dirs) && -z $(listed_ids) ]] \
  && ok "released every seat: no domain, no seat directory, empty list" || { seat_domains >>"$t/out"; not_ok "released every seat: no domain, no seat directory, empty list"; }
leaks=0
while read -r tok; do [[ -n $tok ]] && grep -qF "$tok" "$t/seatd.log" && leaks=$((leaks + 1)); done <"$t/all-tokens"
echo "tokens issued: $(wc -l <"$t/all-tokens"), found in the log: $leaks" >"$t/out"
[[ $leaks == 0 && $(wc -l <"$t/all-tokens") -ge 8 ]] && ok "seatd's log (debug level) contains none of the $(wc -l <"$t/all-tokens") tokens issued" || not_ok "seatd's log contains no token"
kill -0 "$seatd_pid" 2>/dev/null && ok "seatd is still serving" || not_ok "seatd is still serving"

echo "# took $(($(date +%s) - t_start)) s"
echo "1..$n"
exit $((failed > 0))
