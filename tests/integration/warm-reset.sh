#!/usr/bin/env bash
# warm-reset.sh: warm reset end to end against a private seatd and real VMs: each slot's
# saved states are made beside its seats, a reset restores one (two seats of one image at
# once), every restore gets its own RNG output and machine id, nothing of the last session
# survives (the same canaries as a cold reset), and a damaged, edited or foreign state is
# refused with a cold boot that `seatctl status` explains. Speaks TAP.
#   usage: warm-reset.sh BUILD_DIR
# Builds and signs its own test image; every domain and process it makes is removed on exit.
# Needs root and a running libvirtd (never restarted here).
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite warm-reset
need_cmd virsh qemu-img python3
need_libvirt

harness_seatd_must_live=1
t_start=$(date +%s)

unset SEATD_TOKEN
seatd_conf accel=tcg allow_tcg=true inspect_images=false
seatd_start

field() { "$CTL" --json status "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$2" 2>/dev/null; }
x() { "$CTL" exec "$@"; }
# Wait until the seat's next reset can be warm (its standby identity's state is made or checked).
wait_standby() {
  local st
  for _ in $(seq 1 600); do
    st=$(field "$1" warm_standby)
    [[ $st == ready ]] && return 0
    [[ $st == none* ]] && { echo "standby of $1: $st"; return 1; }
    sleep 0.2
  done
  echo "standby of $1 still '$st'"; return 1
}
warm_files() { ls "$t/state/warm/$1/" 2>/dev/null | tr '\n' ' '; }
ident() { x "$1" -- sh -c 'echo "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n") $(cat /etc/machine-id) $(hostname)"' 2>/dev/null; }

image_import

# ---------------------------------------------------------------- 1. provision: cold, state made beside
"$CTL" -q --json provision --image test-image --count 2 >"$t/prov" 2>"$t/out" || bail "provision failed"
mapfile -t seats < <(python3 -c 'import json,sys; [print(s["id"]) for s in json.load(open(sys.argv[1]))["seats"]]' "$t/prov")
A=${seats[0]:-} B=${seats[1]:-}
[[ -n $A && -n $B ]] || bail "no seats"
[[ $(field "$A" reset_mode) == cold && $(field "$A" reset_reason) == *"new seat"* ]] \
  && ok "a new seat came up cold and status says why ($(field "$A" reset_reason))" || not_ok "a new seat came up cold and status says why"
check_cmd "both slots get a saved state for their other identity (warm_standby: ready)" bash -c "$(declare -f wait_standby field); CTL='$CTL'; wait_standby $A && wait_standby $B"
st=$(stat -c '%a' "$t/state/warm/$A/g2.save" "$t/state/warm/$A/g2.qcow2" "$t/state/warm/$A/g2.meta" "$t/state/warm/key" 2>&1 | sort -u | tr '\n' ' ')
[[ $st == "600 " && $(stat -c '%a' "$t/state/warm") == 711 && $(stat -c '%a' "$t/state/warm/$A") == 711 ]] \
  && ok "saved state, overlay, sidecar and key are 0600 in seatd's state dir ($(warm_files "$A"))" || not_ok "saved state files are 0600 (got $st)"
grep -q "^slot=$A$" "$t/state/warm/$A/g2.meta" && grep -q "^domain=seatd-$A-g2$" "$t/state/warm/$A/g2.meta" && grep -qE '^mac=[0-9a-f]{64}$' "$t/state/warm/$A/g2.meta" \
  && ok "the sidecar names the slot, the domain identity and carries a MAC" || not_ok "the sidecar names the slot, the domain identity and carries a MAC"

# ---------------------------------------------------------------- 2. canaries, then two warm resets at once
MARK=canary-$RANDOM$RANDOM
canaries_write() {
  x "$1" -- sh -c "mkdir -p /home /usr/local/bin && for d in / /root /tmp /etc /var /home /usr/local/bin; do echo $MARK > \$d/canary-w || exit 1; done &&
    dd if=/dev/zero of=/var/big-canary bs=1M count=16 2>/dev/null && echo $MARK >> /var/big-canary &&
    (setsid sleep 7777 </dev/null >/dev/null 2>&1 &) && sleep 1 && sync && echo written"
}
canaries_gone() {
  x "$1" -- sh -c "for f in /canary-w /root/canary-w /tmp/canary-w /etc/canary-w /var/canary-w /home/canary-w /usr/local/bin/canary-w /var/big-canary; do [ -e \$f ] && echo FOUND \$f; done;
    grep -rl $MARK /etc /root /var /home /tmp /usr/local 2>/dev/null; ps | grep 'sleep 777[7]'; echo checked"
}
canaries_write "$A" >"$t/out" 2>&1 && grep -q written "$t/out" && ok "canaries written in $A: 8 files and a process" || not_ok "canaries written in $A"
id_a1=$(ident "$A") id_b1=$(ident "$B")
"$CTL" -q reset "$A" >"$t/rA" 2>&1 & pa=$!
"$CTL" -q reset "$B" >"$t/rB" 2>&1 & pb=$!
wait "$pa"; ra=$?; wait "$pb"; rb=$?
cat "$t/rA" "$t/rB" >"$t/out"
[[ $ra == 0 && $rb == 0 && $(field "$A" reset_mode) == warm && $(field "$B" reset_mode) == warm ]] \
  && ok "two seats of one image reset at once, both warm" || not_ok "two seats of one image reset at once, both warm ($(field "$A" reset_mode): $(field "$A" reset_reason) / $(field "$B" reset_mode): $(field "$B" reset_reason))"
[[ $(field "$A" domain) == "seatd-$A-g2" && $(field "$B" domain) == "seatd-$B-g2" && $(our_domains | grep -c -- '-g2$') -ge 2 ]] \
  && ok "both restored machines run at once ($(field "$A" domain), $(field "$B" domain))" || not_ok "both restored machines run at once"
x "$A" -- sh -c 'sleep 2; hostname' >"$t/hA" 2>&1 & pa=$!
x "$B" -- sh -c 'sleep 2; hostname' >"$t/hB" 2>&1 & pb=$!
wait "$pa" "$pb"
[[ $(cat "$t/hA") == "seat-$A" && $(cat "$t/hB") == "seat-$B" ]] && ok "both answer exec concurrently, each with its own hostname" \
  || { cat "$t/hA" "$t/hB" >"$t/out"; not_ok "both answer exec concurrently, each with its own hostname"; }
canaries_gone "$A" >"$t/out" 2>&1
[[ $(cat "$t/out") == checked ]] && ok "after a warm reset no canary file and no canary process survives" || not_ok "after a warm reset no canary survives"
id_a2=$(ident "$A") id_b2=$(ident "$B")
echo "$id_a2 / $id_b2" >"$t/out"
[[ ${id_a2%% *} != "${id_b2%% *}" && $(echo "$id_a2" | cut -d' ' -f2) != $(echo "$id_b2" | cut -d' ' -f2) ]] \
  && ok "the two warm seats differ in RNG output and machine id" || not_ok "the two warm seats differ in RNG output and machine id"

# ---------------------------------------------------------------- 3. two restores of one slot's state
meta_g2=$(sha256sum <"$t/state/warm/$A/g2.meta")
check_cmd "the standby state of $A (g1) is made" wait_standby "$A"
"$CTL" -q reset "$A" >"$t/out" 2>&1 && [[ $(field "$A" reset_mode) == warm && $(field "$A" domain) == "seatd-$A-g1" ]] \
  && ok "the next reset restores the slot's other identity (g1), warm" || not_ok "the next reset restores g1 warm ($(field "$A" reset_reason))"
check_cmd "the standby state of $A (g2) is checked again" wait_standby "$A"
"$CTL" -q reset "$A" >"$t/out" 2>&1
id_a4=$(ident "$A")
echo "restore 1 of g2: $id_a2"$'\n'"restore 2 of g2: $id_a4" >"$t/out"
[[ $(field "$A" reset_mode) == warm && $(field "$A" domain) == "seatd-$A-g2" && $(sha256sum <"$t/state/warm/$A/g2.meta") == "$meta_g2" ]] \
  && ok "generation 4 restored the very state generation 2 did (same sidecar)" || not_ok "generation 4 restored the very state generation 2 did"
rnd2=${id_a2%% *} rnd4=${id_a4%% *}
[[ ${#rnd2} == 64 && ${#rnd4} == 64 && $rnd2 != "$rnd4" ]] && ok "two restores of one state read different bytes from /dev/urandom" || not_ok "two restores of one state read different bytes from /dev/urandom"
mid2=$(echo "$id_a2" | cut -d' ' -f2) mid4=$(echo "$id_a4" | cut -d' ' -f2) mid1=$(echo "$id_a1" | cut -d' ' -f2)
[[ $mid2 =~ ^[0-9a-f]{32}$ && $mid4 =~ ^[0-9a-f]{32}$ && $mid2 != "$mid4" && $mid1 != "$mid2" ]] \
  && ok "two restores of one state have different machine ids" || not_ok "two restores of one state have different machine ids"
[[ $(echo "$id_a4" | cut -d' ' -f3) == "seat-$A" ]] && ok "the restored machine has the seat's hostname, not the saved one's" || not_ok "the restored machine has the seat's hostname"
# The state restored here was saved at the start of the test: without configure's time the
# guest's clock would be behind by its age.
saved_at=$(sed -n 's/^created=//p' "$t/state/warm/$A/g2.meta")
guest_now=$(x "$A" -- date +%s 2>/dev/null) host_now=$(date +%s)
echo "guest $guest_now host $host_now state saved at $saved_at" >"$t/out"
[[ $guest_now =~ ^[0-9]+$ && $saved_at =~ ^[0-9]+$ ]] && (( guest_now - host_now <= 3 && host_now - guest_now <= 3 )) \
  && ok "the restored guest's clock is the host's (within 3 s; its state is $((host_now - saved_at)) s old)" || not_ok "the restored guest's clock is the host's"
console_gen=$("$CTL" --json status "$A" | python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])')
[[ -n $(ls "$t/state/seats/$A/console-g$console_gen.log" 2>/dev/null) ]] && ok "the restored machine writes its console to this generation's log" || not_ok "the restored machine writes its console to this generation's log"

# ---------------------------------------------------------------- 4. a cold reset wipes the same canaries
canaries_write "$A" >"$t/out" 2>&1 && grep -q written "$t/out" || not_ok "canaries written again in $A"
"$CTL" reset --cold "$A" >"$t/out" 2>&1
[[ $(field "$A" reset_mode) == cold && $(field "$A" reset_reason) == *"cold reset was asked"* ]] && grep -q "^reset_mode: cold" "$t/out" \
  && ok "seatctl reset --cold boots cold, and says so" || not_ok "seatctl reset --cold boots cold, and says so"
canaries_gone "$A" >"$t/out" 2>&1
[[ $(cat "$t/out") == checked ]] && ok "after a cold reset the same canary check passes" || not_ok "after a cold reset the same canary check passes"

# ---------------------------------------------------------------- 5. damaged, edited, foreign states are refused
# Each time the state the next reset needs is spoilt after it was made and checked.
next_k() { [[ $(field "$1" domain) == *-g1 ]] && echo 2 || echo 1; }
refused() { # refused DESCRIPTION PATTERN SPOIL-COMMAND
  local d=$1 pat=$2 k
  wait_standby "$A" >"$t/out" 2>&1 || { not_ok "$d (no standby state to spoil)"; return; }
  k=$(next_k "$A")
  K=$k eval "$3"
  "$CTL" reset "$A" >"$t/out" 2>&1
  if [[ $(field "$A" reset_mode) == cold && $(field "$A" reset_reason) == *$pat* && $(field "$A" state) == ready ]] && grep -q "^reset_reason: .*$pat" "$t/out"; then
    ok "$d: refused, the seat booted cold, status says '$(field "$A" reset_reason)'"
  else
    echo "reset_mode=$(field "$A" reset_mode) reason=$(field "$A" reset_reason)" >>"$t/out"; not_ok "$d"
  fi
}
refused "a save file with 4 KiB overwritten" "does not match the hash" \
  'dd if=/dev/urandom of="$t/state/warm/$A/g$K.save" bs=4096 count=1 seek=1000 conv=notrunc 2>/dev/null'
refused "a sidecar edited to name another image digest" "MAC is not this seatd" \
  'sed -i -E "s/^image_digest=0/image_digest=1/;t;s/^image_digest=./image_digest=0/" "$t/state/warm/$A/g$K.meta"'
refused "another slot's state (seat $B's, MAC'ed by this seatd) copied over" "another seat slot" \
  'wait_standby "$B" >/dev/null; for f in save qcow2 meta; do cp "$t/state/warm/$B/g$K.$f" "$t/state/warm/$A/g$K.$f"; done'
refused "a saved overlay with a byte changed" "saved overlay does not match" \
  'printf x | dd of="$t/state/warm/$A/g$K.qcow2" bs=1 seek=100000 conv=notrunc 2>/dev/null'
x "$A" -- true >"$t/out" 2>&1 && ok "the seat works after the refusals" || not_ok "the seat works after the refusals"
check_cmd "a new state replaces the refused one" wait_standby "$A"
"$CTL" -q reset "$A" >"$t/out" 2>&1 && [[ $(field "$A" reset_mode) == warm ]] && ok "and the next reset is warm again" || not_ok "and the next reset is warm again ($(field "$A" reset_reason))"

# ---------------------------------------------------------------- 6. release removes the slot's states
for s in "$A" "$B"; do "$CTL" release "$s" >>"$t/out" 2>&1; done
[[ -z $(our_domains) && ! -e $t/state/warm/$A && ! -e $t/state/warm/$B ]] \
  && ok "release: no domain of this seatd left, the slots' saved states removed" || { our_domains >>"$t/out"; ls -la "$t/state/warm" >>"$t/out" 2>&1; not_ok "release: no domain left, saved states removed"; }
kill -0 "$seatd_pid" 2>/dev/null && ok "seatd is still serving" || not_ok "seatd is still serving"

echo "# took $(($(date +%s) - t_start)) s"
echo "1..$n"
exit $((failed > 0))
