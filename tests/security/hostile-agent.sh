#!/usr/bin/env bash
# hostile-agent.sh: seats whose guest agent misbehaves on purpose (tests/security/
# hostile-agent.c) beside a normal seat, under one private seatd. Each misbehaviour must
# fault only its own seat, with a clear error, while seatd keeps serving the others and
# its memory stays bounded. Speaks TAP.
#   usage: hostile-agent.sh BUILD_DIR
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
HOSTILE=$build/tests/security/hostile-agent
harness_vm_suite hostile-agent "$HOSTILE"
need_libvirt --start

image_build "$t/test-image"
image_build "$t/hostile-image" --guest-init "$HOSTILE" --name hostile-image

# Images whose agent breaks the protocol before it has answered the first hello (issue 13
# #14): the same hostile agent, told its violation on the kernel command line (signed with
# the rest of the manifest), at version 3 so that the error must name the version too.
hello_modes=(giant badjson badutf8 request wrongid)
declare -A hello_why=([giant]="a frame over the 1048576-byte cap" [badjson]="malformed JSON"
  [badutf8]="not valid UTF-8" [request]="'exec' request, which an agent never sends" [wrongid]="for id 1001, which seatd never asked for")
cmdline=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cmdline"])' "$t/hostile-image/image.json") \
  || bail "no cmdline in hostile-image"
for mode in "${hello_modes[@]}"; do
  image_build "$t/hello-$mode" --guest-init "$HOSTILE" --name "hostile-hello-$mode" --version 3 \
    --cmdline "$cmdline seatd.hostile_hello=$mode"
done
seatd_conf accel=tcg allow_tcg=true inspect_images=false
SEATD_LOG_LEVEL=info seatd_start
"$CTL" -q image import "$t/test-image/manifest.json" >/dev/null && "$CTL" -q image import "$t/hostile-image/manifest.json" >/dev/null \
  || bail "import failed"
for mode in "${hello_modes[@]}"; do
  "$CTL" -q image import "$t/hello-$mode/manifest.json" >/dev/null || bail "import of hostile-hello-$mode failed"
done

seat() { "$CTL" -q --json provision --image "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])'; }
state_of() { "$CTL" --json status "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$seatd_pid/status"; }

good=$(seat test-image)
[[ -n $good ]] && ok "a normal seat ($good)" || bail "no normal seat"

# The positive control on a hostile seat: the agent behaves for "echo".
h=$(seat hostile-image)
[[ -n $h ]] && ok "a seat whose agent is hostile provisions (it greets properly): $h" || bail "no hostile seat"
out=$("$CTL" exec "$h" -- echo 2>&1)
[[ $out == fine ]] && ok "positive control: the hostile agent's well-formed exec works" || { echo "$out" >"$t/out"; not_ok "positive control"; }

rss0=$(rss_kb)
for mode in flood giant badjson wrongid stall newer; do
  [[ $(state_of "$h") == ready ]] || h=$(seat hostile-image)
  start=${EPOCHREALTIME/[.,]/}
  "$CTL" exec --timeout 2 "$h" -- "$mode" >"$t/out" 2>&1; rc=$?
  ms=$(( (${EPOCHREALTIME/[.,]/} - start) / 1000 ))
  st=$(state_of "$h")
  if [[ $rc != 0 && $st == faulted ]] && grep -qE "protocol|in time|bad or oversized|out of order|answered id" "$t/out"; then
    ok "$mode: refused in $ms ms, only that seat faulted ($(head -c 120 "$t/out" | tr '\n' ' '))"
  else
    echo "rc=$rc state=$st" >>"$t/out"; not_ok "$mode: the hostile seat is faulted with a clear error"
  fi
  [[ $("$CTL" exec "$good" -- /bin/echo still 2>/dev/null) == still ]] && ok "$mode: the normal seat still answers" \
    || not_ok "$mode: the normal seat still answers"
done
# Side by side: an exec holds the hostile seat's channel open while a second one gets an
# exit for an id nobody asked for. Both calls end with the violation, the seat faults, and
# the normal seat is untouched.
[[ $(state_of "$h") == ready ]] || h=$(seat hostile-image)
"$CTL" exec --timeout 60 "$h" -- hold >"$t/hold" 2>&1 &
holder=$!
# (the second call comes once seatd has admitted the first: its exec.start in the audit log)
wait_until 'grep -qsF '\''"argv":["hold"]'\'' "$t/state/seats/$h"/audit-g*.log || ! kill -0 "$holder" 2>/dev/null'
"$CTL" exec --timeout 2 "$h" -- wrongid >"$t/out" 2>&1; rc=$?
wait "$holder"; hrc=$?
st=$(state_of "$h")
if [[ $rc != 0 && $hrc != 0 && $st == faulted ]] && grep -q "which no request is waiting for" "$t/out" && grep -qE "protocol|faulted" "$t/hold"; then
  ok "concurrent: a frame for an unknown id ends both calls on that seat, which faults ($(head -c 160 "$t/out" | tr '\n' ' '))"
else
  { echo "rc=$rc holder=$hrc state=$st"; cat "$t/hold"; } >>"$t/out"; not_ok "concurrent: a frame for an unknown id faults only that seat, ending both its calls"
fi
[[ $("$CTL" exec "$good" -- /bin/echo still 2>/dev/null) == still ]] && ok "concurrent: the normal seat still answers" \
  || not_ok "concurrent: the normal seat still answers"
rss1=$(rss_kb)
(( rss1 - rss0 < 65536 )) && ok "seatd's memory stayed bounded through the flood and the giant frame (${rss0} kB -> ${rss1} kB)" \
  || not_ok "seatd's memory stayed bounded (${rss0} kB -> ${rss1} kB)"
kill -0 "$seatd_pid" && ok "seatd is still serving" || not_ok "seatd is still serving"
grep -q "faulted" "$t/seatd.log" && ok "each fault is in seatd's log" || not_ok "each fault is in seatd's log"
# A faulted seat can be reset into a new machine (here: the hostile image again) or released.
f=$("$CTL" --json list | python3 -c 'import json,sys; print([s["id"] for s in json.load(sys.stdin)["seats"] if s["state"]=="faulted"][0])')
"$CTL" release "$f" >"$t/out" 2>&1 && ok "a faulted seat can be released" || not_ok "a faulted seat can be released"

# An agent that breaks the protocol before its first hello reply proves the image broken:
# the provision fails at once, naming the violation and the image (name and version),
# instead of holding the seat for the whole hello timeout (180 s under TCG), which only a
# guest that says nothing at all (a slow boot) still gets. All at once: before the fix,
# each would take the full timeout.
hello_timeout=180
pids=()
for mode in "${hello_modes[@]}"; do
  ( s0=${EPOCHREALTIME/[.,]/}
    "$CTL" -q provision --image "hostile-hello-$mode" >"$t/hello-$mode.out" 2>&1; rc=$?
    echo "$rc $(( (${EPOCHREALTIME/[.,]/} - s0) / 1000000 ))" >"$t/hello-$mode.rc" ) &
  pids+=($!)
done
wait "${pids[@]}"
for mode in "${hello_modes[@]}"; do
  read -r rc secs <"$t/hello-$mode.rc"
  cp "$t/hello-$mode.out" "$t/out"
  why=${hello_why[$mode]}
  if [[ $rc != 0 ]] && (( secs < hello_timeout )) && grep -qF "image 'hostile-hello-$mode' version 3" "$t/out" &&
     grep -qF "broke the protocol before answering hello" "$t/out" && grep -qF "$why" "$t/out"; then
    ok "hello $mode: provision failed in ${secs} s (hello timeout ${hello_timeout} s), naming the violation and the image ($(head -c 300 "$t/out" | tr '\n' ' '))"
  else
    echo "rc=$rc after ${secs} s; wanted: image 'hostile-hello-$mode' version 3, $why" >>"$t/out"
    not_ok "hello $mode: provision fails at once, naming the violation and the image"
  fi
  grep -q "provision of seat '[^']*' failed: .*image 'hostile-hello-$mode' version 3.*$why" "$t/seatd.log" \
    && ok "hello $mode: seatd's log tells the operator which image did it" \
    || not_ok "hello $mode: seatd's log tells the operator which image did it"
done
[[ $("$CTL" exec "$good" -- /bin/echo still 2>/dev/null) == still ]] && ok "hello: the normal seat still answers" \
  || not_ok "hello: the normal seat still answers"

echo "1..$n"
exit $((failed > 0))
