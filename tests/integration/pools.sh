#!/usr/bin/env bash
# pools.sh: pools of ready seats end to end against a private seatd and real VMs: a pool
# fills; provision claims a pooled seat (its participant, a new token that works for that
# seat only) much faster than a cold boot, and the pool refills; two racing provisions get
# two different seats; pooled seats whose machine does not answer are released and replaced,
# never handed out; the pool and its seats survive a seatd restart; the host limit holds the
# refill back and says so, and the facilitator socket's provisions too (a claim from the pool
# still goes; provisions racing for the last places cannot all boot); a pool of 0 releases its
# seats. Speaks TAP.
#   usage: pools.sh BUILD_DIR
# Builds and signs its own test image; every domain and process it makes is removed on exit.
# Needs root and a running libvirtd (never restarted here).
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite pools
need_cmd virsh qemu-img python3 setpriv
need_libvirt

harness_seatd_must_live=1
t_start=$(date +%s)

export SEATD_SOCKET=$t/ctl.sock
unset SEATD_TOKEN
# Warm reset off: this test is about pools, and each saved state is one more boot on a
# 2-core machine. pool_max_seats leaves room for the pool, the claims it makes and a cold boot.
write_conf() {
  seatd_conf accel=tcg allow_tcg=true inspect_images=false warm_reset=false "pool_max_seats=$1" facilitator_group=nogroup
}
write_conf 8
seatd_start

py() { python3 -c "import json,sys; d=json.load(sys.stdin); $1"; }
pool_field() { "$CTL" --json pool status 2>/dev/null | py "p=[x for x in d['pools'] if x['image']=='test-image']; print(p[0].get('$1','') if p else '')"; }
pooled_ids() { "$CTL" --json list 2>/dev/null | py "print(' '.join(sorted(s['id'] for s in d['seats'] if s.get('pool'))))"; }
seat_field() { "$CTL" --json status "$1" 2>/dev/null | py "print(d.get('$2',''))"; }
wait_ready() { # wait_ready N: the pool holds N ready seats
  local r
  for _ in $(seq 1 900); do
    r=$(pool_field ready)
    [[ $r == "$1" && $(pooled_ids | wc -w) == "$1" ]] && return 0
    sleep 0.5
  done
  echo "pool: ready=$r, want $1; $("$CTL" pool status 2>&1)"; return 1
}
nobody() { as_nobody "$CTL" "$@"; }
# A dashboard's provision, on the facilitator socket as seat-web makes it (run as nobody, in
# the suite's facilitator_group): prints "seat ID FROM_POOL" or "error CODE MESSAGE".
install -m 0644 "$HARNESS_SRC/tests/lib/fac_client.py" "$t/fac.py"
fac_provision() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- /usr/bin/python3 "$t/fac.py" provision "$t/facilitator.sock" test-image "$1" frida; }
n_seats() { "$CTL" --json list 2>/dev/null | py "print(len(d['seats']))"; }

image_import

# ---------------------------------------------------------------- 1. a cold provision, for comparison
t0=$(ms)
"$CTL" -q --json provision --image test-image >"$t/cold" 2>"$t/out" || bail "cold provision failed"
cold_ms=$(($(ms) - t0))
C=$(py 'print(d["seats"][0]["id"])' <"$t/cold")
"$CTL" -q release "$C" >"$t/out" 2>&1 || not_ok "release the cold seat"

# ---------------------------------------------------------------- 2. a pool of 2 fills
"$CTL" --json pool set test-image --ready 2 >"$t/out" 2>&1 && [[ $(py 'print(d["size"])' <"$t/out") == 2 ]] \
  && ok "pool set test-image --ready 2 is accepted" || not_ok "pool set test-image --ready 2 is accepted"
wait_ready 2 >"$t/out" 2>&1 && ok "a pool of 2 fills: $(pooled_ids)" || not_ok "a pool of 2 fills"
"$CTL" --json list | py "s=[x for x in d['seats'] if x.get('pool')]; assert len(s)==2 and all(x['state']=='ready' and x['participant']=='' for x in s)" >"$t/out" 2>&1 \
  && ok "both pooled seats are READY and nobody's" || not_ok "both pooled seats are READY and nobody's"
P=$(pooled_ids)
S1=${P%% *}
"$CTL" reset "$S1" >"$t/out" 2>&1
[[ $? != 0 ]] && grep -q "pool" "$t/out" && ok "a pooled seat cannot be reset (its token would reach the operator)" || not_ok "a pooled seat cannot be reset"

# ---------------------------------------------------------------- 3. a claim, and the refill
t0=$(ms)
"$CTL" -q --json provision --image test-image --participant alice >"$t/claim" 2>"$t/out"
claim_ms=$(($(ms) - t0))
A=$(py 'print(d["seats"][0]["id"])' <"$t/claim" 2>/dev/null) tokA=$(py 'print(d["seats"][0]["token"])' <"$t/claim" 2>/dev/null)
[[ " $P " == *" $A "* && $(py 'print(d["seats"][0].get("from_pool"), d["seats"][0]["participant"])' <"$t/claim") == "True alice" ]] \
  && ok "provision claims a pooled seat ($A) for its participant" || { cat "$t/claim" >>"$t/out"; not_ok "provision claims a pooled seat"; }
(( claim_ms < cold_ms )) && ok "the claim took $claim_ms ms through seatctl, a cold provision $cold_ms ms" \
  || { echo "claim $claim_ms ms, cold $cold_ms ms" >"$t/out"; not_ok "a claim is faster than a cold boot"; }
token_file "$t/tokA" "$tokA" nobody:nogroup 0600
[[ $tokA =~ ^[0-9a-f]{64}$ && $(nobody --token-file "$t/tokA" exec "$A" -- hostname 2>"$t/out") == "seat-$A" ]] \
  && ok "the new token opens the claimed seat" || not_ok "the new token opens the claimed seat"
other=$(echo "$P" | tr ' ' '\n' | grep -v "^$A$")
nobody --token-file "$t/tokA" exec "$other" -- true >"$t/out" 2>&1 \
  && not_ok "the token opens only its own seat" || ok "the token does not open the other pooled seat"
[[ $(seat_field "$A" pool) == "" ]] && ok "the claimed seat is out of the pool" || not_ok "the claimed seat is out of the pool"
wait_ready 2 >"$t/out" 2>&1 && [[ " $(pooled_ids) " != *" $A "* ]] && ok "the pool refills to 2 ($(pooled_ids))" || not_ok "the pool refills to 2"
"$CTL" -q release "$A" >"$t/out" 2>&1

# ---------------------------------------------------------------- 4. two provisions race
P=$(pooled_ids)
"$CTL" -q --json provision --image test-image --participant r1 >"$t/r1" 2>&1 & p1=$!
"$CTL" -q --json provision --image test-image --participant r2 >"$t/r2" 2>&1 & p2=$!
wait "$p1"; rc1=$?; wait "$p2"; rc2=$?
R1=$(py 'print(d["seats"][0]["id"])' <"$t/r1" 2>/dev/null) R2=$(py 'print(d["seats"][0]["id"])' <"$t/r2" 2>/dev/null)
cat "$t/r1" "$t/r2" >"$t/out"
[[ $rc1 == 0 && $rc2 == 0 && -n $R1 && -n $R2 && $R1 != "$R2" && " $P " == *" $R1 "* && " $P " == *" $R2 "* ]] \
  && ok "two racing provisions get two different pooled seats ($R1, $R2)" || not_ok "two racing provisions get two different pooled seats"
[[ $(seat_field "$R1" participant) == r1 && $(seat_field "$R2" participant) == r2 ]] \
  && ok "each is bound to its own participant" || not_ok "each is bound to its own participant"
"$CTL" -q release "$R1" >/dev/null 2>&1; "$CTL" -q release "$R2" >/dev/null 2>&1
wait_ready 2 >"$t/out" 2>&1 && ok "the pool refills after both claims" || not_ok "the pool refills after both claims"

# ---------------------------------------------------------------- 5. pooled seats that do not answer
P=$(pooled_ids)
for s in $P; do "${VIRSH[@]}" suspend "$(seat_field "$s" domain)" >>"$t/out" 2>&1; done
replaced0=$(pool_field replaced)
"$CTL" -q --json provision --image test-image --participant bob >"$t/claim" 2>"$t/out"; rc=$?
B=$(py 'print(d["seats"][0]["id"])' <"$t/claim" 2>/dev/null)
# (bob's seat is booted for him, or, when the pool has already replaced one of the suspended
# machines by then, as it does on a fast host, that replacement is claimed: either way none
# of the suspended ones; the claims counted in 6. follow from which)
claims=3
[[ $(py 'print(d["seats"][0].get("from_pool"))' <"$t/claim" 2>/dev/null) == True ]] && claims=4
[[ $rc == 0 && -n $B && " $P " != *" $B "* && $(seat_field "$B" participant) == bob ]] \
  && ok "with every pooled machine suspended, provision hands out none of them ($B, $( ((claims == 4)) && echo "a replacement claimed" || echo booted))" || not_ok "suspended pooled seats are not handed out"
x=$("$CTL" exec "$B" -- echo alive 2>"$t/out")
[[ $x == alive ]] && ok "the seat handed out instead works" || not_ok "the seat handed out instead works"
gone=1
for _ in $(seq 1 300); do
  gone=1; for s in $P; do "$CTL" status "$s" >/dev/null 2>&1 && gone=0; done
  ((gone)) && break; sleep 0.5
done
((gone)) && [[ $(($(pool_field replaced) - replaced0)) == 2 ]] && ok "both were released (pool status: replaced +2)" \
  || { "$CTL" list >"$t/out" 2>&1; not_ok "the suspended pooled seats are released"; }
wait_ready 2 >"$t/out" 2>&1 && [[ -z $(comm -12 <(echo "$P" | tr ' ' '\n' | sort) <(pooled_ids | tr ' ' '\n' | sort)) ]] \
  && ok "and replaced by two new ones ($(pooled_ids))" || not_ok "and replaced by two new ones"

# ---------------------------------------------------------------- 6. pool status
"$CTL" --json pool status >"$t/status" 2>"$t/out"
py "p=d['pools'][0]; h=d['host']; assert (p['image'],p['egress'],p['size'],p['ready'],p['state'])==('test-image','none',2,2,'full'), p; assert p['claimed']==$claims and p['replaced']>=2, p; assert h['seats']==3 and h['pool_max_seats']==8 and h['memory_mib']>0, h" <"$t/status" >"$t/out" 2>&1 \
  && ok "pool status --json: size, ready, state, claims, replacements, host usage" || { cat "$t/status" >>"$t/out"; not_ok "pool status --json"; }
"$CTL" pool status >"$t/out" 2>&1 && grep -q "^test-image .* 2 .* 2 .*full" "$t/out" && ok "pool status prints a table" || not_ok "pool status prints a table"

# ---------------------------------------------------------------- 7. a restart keeps the pool; the host limit
P=$(pooled_ids)
seatd_stop
grep -q "^pool image=test-image egress=none ready=2$" "$t/state/pools" && ok "the pool is saved in the state directory" || not_ok "the pool is saved in the state directory"
write_conf 3 # B and the 2 pooled seats: the host is full
seatd_start
[[ $(pool_field size) == 2 && $(pooled_ids) == "$P" ]] && ok "after a restart the pool is back with its adopted seats ($P)" \
  || { "$CTL" list >"$t/out" 2>&1; not_ok "after a restart the pool is back with its adopted seats"; }
"$CTL" -q --json provision --image test-image --participant carol >"$t/claim" 2>"$t/out"
D=$(py 'print(d["seats"][0]["id"])' <"$t/claim" 2>/dev/null)
[[ " $P " == *" $D "* ]] && ok "an adopted pooled seat is claimed ($D)" || not_ok "an adopted pooled seat is claimed"
held=
wait_until 'held=$(pool_field held); [[ -n $held ]]'
[[ $held == *pool_max_seats* && $(pool_field ready) == 1 ]] && ok "the host limit holds the refill and status says why: $held" \
  || { "$CTL" pool status >"$t/out" 2>&1; not_ok "the host limit holds the refill"; }
# The host is at pool_max_seats, filled by the pool: a dashboard's handout still claims the
# pooled seat left (a claim adds no seat), and only a cold boot past the limit is refused.
out=$(fac_provision dora 2>&1)
read -r what E from <<<"$out"
[[ $what == seat && $from == True && " $P " == *" $E "* ]] && ok "at the host limit, a facilitator's provision claims the last pooled seat ($E)" \
  || { echo "$out" >"$t/out"; not_ok "at the host limit, a facilitator's provision claims the last pooled seat"; }
out=$(fac_provision erin 2>&1)
[[ $out == "error "*pool_max_seats* && $(n_seats) == 3 && $(our_domains | wc -l) == 3 ]] \
  && ok "the next one, which would boot a seat past the limit, is refused and makes nothing: ${out#error }" \
  || { { echo "$out"; "$CTL" list; } >"$t/out" 2>&1; not_ok "a facilitator's provision past the host limit is refused"; }
"$CTL" -q release "$D" >"$t/out" 2>&1
[[ $what == seat ]] && "$CTL" -q release "$E" >>"$t/out" 2>&1
wait_ready 2 >"$t/out" 2>&1 && ok "room again: the pool refills" || not_ok "room again: the pool refills"

# ---------------------------------------------------------------- 8. a pool of 0
"$CTL" pool set test-image --ready 0 >"$t/out" 2>&1 || not_ok "pool set --ready 0"
for _ in $(seq 1 300); do [[ -z $(pooled_ids) ]] && break; sleep 0.5; done
[[ -z $(pooled_ids) && $("$CTL" --json pool status | py 'print(len(d["pools"]))') == 0 && $(seat_field "$B" participant) == bob ]] \
  && ok "--ready 0 releases the pooled seats and removes the pool; claimed seats stay" || { "$CTL" list >"$t/out" 2>&1; not_ok "--ready 0 releases the pooled seats"; }
"$CTL" -q pool set test-image --ready 1 --egress no-such-profile >"$t/out" 2>&1
[[ $? != 0 ]] && grep -q "no-such-profile" "$t/out" && ok "a pool with an egress profile that does not exist is refused: $(head -1 "$t/out")" \
  || not_ok "a pool with an unknown egress profile is refused"

# ---------------------------------------------------------------- 9. provisions racing for the last places
# Only bob's seat runs and pool_max_seats is 3: three dashboard provisions at once (each on
# its own connection, as seat-web's workers make them) have two places between them. A seat
# counts from the moment its boot is admitted, so two boot and one is refused; counted only
# once booted, all three would have seen two free places.
# (the pool's seats leave the table once their release is done, a little after the pool)
for _ in $(seq 1 300); do [[ $(n_seats) == 1 ]] && break; sleep 0.5; done
[[ $(n_seats) == 1 ]] || { "$CTL" list >"$t/out" 2>&1; bail "the pool's released seats are still in seatd's table after 150 s"; }
rp=()
for i in 1 2 3; do fac_provision "race$i" >"$t/race$i" 2>&1 & rp+=($!); done
wait "${rp[@]}"
booted=$(cat "$t/race1" "$t/race2" "$t/race3" | grep -c "^seat ")
refused=$(cat "$t/race1" "$t/race2" "$t/race3" | grep -c "^error .*pool_max_seats")
[[ $booted == 2 && $refused == 1 && $(n_seats) == 3 ]] && ok "three racing facilitator provisions for two places: two seats boot, one is refused" \
  || { cat "$t/race1" "$t/race2" "$t/race3" >"$t/out"; "$CTL" list >>"$t/out" 2>&1; not_ok "racing facilitator provisions stay within pool_max_seats ($booted booted, $refused refused)"; }

for s in $("$CTL" --json list | py "print(' '.join(s['id'] for s in d['seats']))"); do "$CTL" -q release "$s" >/dev/null 2>&1; done
[[ -z $(our_domains) ]] && ok "every seat released: no domain of this seatd left" || { our_domains >"$t/out"; not_ok "every seat released"; }
kill -0 "$seatd_pid" 2>/dev/null && ok "seatd is still serving" || not_ok "seatd is still serving"

echo "# took $(($(date +%s) - t_start)) s"
tap_end
