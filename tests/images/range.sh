#!/usr/bin/env bash
# range.sh: the purple range (images/recipes/purple-range, issue 14 parts 2 and 3) end to
# end: recipes whose compose file names an image they do not build are refused; the range
# image is built (or taken from the cache, /var/cache/seatd-images: a fresh machine builds
# it, mmdebstrap for the guest and each container), signed, imported into a private seatd
# and booted in a real TCG seat: systemd, dockerd, compose, four containers from images
# that were in /var/lib/docker before the guest first booted. Then, through seatctl exec:
# nmap from the attacker finds the victim's 22 and 80, hydra finds the weak SSH password,
# suricata on the DMZ bridge logs the scan in eve.json, the backend answers the victim and
# not the attacker; the
# attacker container's traffic out of the guest meets the host's egress filter (an allowed
# server of the egress tests' world answers, a blocked one is dropped and counted); a warm
# reset gives a session with nothing of the first one, whose sealed archive opens with the
# range's logs.
# Speaks TAP.   usage: range.sh BUILD_DIR
# Long (a cold build is ~15 min, a cached one ~1, the boot to READY minutes under TCG):
# not in scripts/test's default run; `scripts/test --suite range` runs it.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite range
need_cmd -h "apt-get install mmdebstrap e2fsprogs qemu-utils libvirt-clients python3-yaml" mmdebstrap mke2fs debugfs qemu-img virsh python3
python3 -c 'import yaml' 2>/dev/null || skip_all "python3-yaml is not installed (the compose file check)"
need_kernel
[[ -z ${SEATD_FRESH_ROOT-} ]] || skip_all "the fresh root has no network for mmdebstrap to fetch Debian packages"
need_libvirt --start

seat_image_setup
RECIPE_DIR=$HARNESS_SRC/images/recipes/purple-range
test_key

# ---------------------------------------------------------------- 1. refused recipes
# Checked before anything is written: no output, no cache entry (recipe_refused NAME
# EXPECTED-REGEX: the recipe on stdin, the compose files beside it in $t/bad).
mkdir -p "$t/bad"
cat >"$t/bad/compose.yaml" <<'EOF'
version: "2.4"
services:
  web:
    image: range/web
  db:
    image: postgres:15
EOF
recipe_refused unloaded "service 'db' names image 'postgres:15', which is not loaded in the image" <<'EOF'
name = x
base = debian-12
container_image = range/web nginx-light
compose = compose.yaml
EOF
cat >"$t/bad/build.yaml" <<'EOF'
services:
  web:
    build: .
    image: range/web
EOF
recipe_refused build "service 'web' has 'build'" <<'EOF'
name = x
base = debian-12
container_image = range/web nginx-light
compose = build.yaml
EOF
recipe_refused no-images "'compose' without any 'container_image'" <<'EOF'
name = x
base = debian-12
compose = compose.yaml
EOF
recipe_refused bad-package "bad package 'nginx;rm' of container image 'range/web'" <<'EOF'
name = x
base = debian-12
container_image = range/web nginx;rm
compose = compose.yaml
EOF

# ---------------------------------------------------------------- 2. build
recipe_build_signed "$RECIPE_DIR"
diag "root.qcow2 $(du -m "$t/img/root.qcow2" | cut -f1) MiB on disk; $(wc -l <"$t/img/packages.txt") packages in the guest ($(grep -E '^(docker.io|docker-compose) ' "$t/img/packages.txt" | tr '\n' ' '))"

# ---------------------------------------------------------------- 3. boot to READY
# The seat is on a network of its own with an uplink into the egress tests' world
# (tests/network/world.sh: an allowed server on 198.51.100.10, a blocked one on
# 203.0.113.10, in a namespace; the guard loaded first), so that the range's containers
# can be checked against the host's egress filter (section 5).
# shellcheck source=../network/world.sh
. "$HARNESS_SRC/tests/network/world.sh"
UPLINK=sdw-up4
world_seatd "$UPLINK" 10.224.0.0/24 5224
world_up "$UPLINK" >"$t/out" 2>&1 || { diag_file "$t/out"; bail "the test world did not come up"; }
cat >"$t/egress/range.profile" <<EOF
# what the range may reach in the test world
allow tcp $WORLD_ALLOWED port 8080
EOF
# Sessions sealed to a facilitator key of the suite's own (section 6 opens the first one).
"$SIGN" keygen --box -p "$t/facilitator.pub" -s "$t/facilitator.key" >/dev/null 2>&1 || bail "seat-sign keygen --box failed"
guestfs_cache_shared # the sealing appliance, built once for every suite
seatd_conf accel=tcg allow_tcg=true inspect_images=false "${world_seatd_keys[@]}" ready_timeout=900 \
	"facilitator_key=$t/facilitator.pub" "evidence_archive_dir=$t/archives"
seatd_start
"$CTL" -q image import "$t/img/manifest.json" >"$t/out" 2>&1 && ok "seatctl image import takes the range bundle" ||
	{ not_ok "seatctl image import takes the range bundle"; diag_file "$t/out"; bail "image import failed"; }

s0=$(date +%s%N)
S=$("$CTL" -q --json provision --image purple-range --participant alice --egress range 2>"$t/out" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])' 2>>"$t/out")
rc=$?
ready_ms=$((($(date +%s%N) - s0) / 1000000))
if [[ $S =~ ^s[0-9a-f]{8}$ ]] && grep -Eq "^$S +ready " <<<"$("$CTL" status "$S" 2>/dev/null)"; then
	ok "provision --image purple-range: seat $S READY after $ready_ms ms (TCG: systemd, dockerd, compose, the readiness check)"
else
	not_ok "provision --image purple-range (rc=$rc, seat '$S')"
	diag_file "$t/out"
	tail -n 40 "$t/seatd.log" | diag_file /dev/stdin
	bail "no seat"
fi
grep -Eo "seat '$S': the image's readiness check passed after [0-9]+ tries" "$t/seatd.log" | tail -n1 | diag_file /dev/stdin

# x [--OPTION VALUE]... [--] COMMAND...: seatctl exec in the seat; every call is counted in
# $t/calls (section 6: each is in the session's audit log).
x() {
	local o=()
	while [[ ${1-} == --?* ]]; do o+=("$1" "$2"); shift 2; done
	[[ ${1-} == -- ]] && shift
	local c="$*"
	printf '%s\n' "${c//$'\n'/\\n}" >>"$t/calls" # one line a call (a script may hold newlines)
	"$CTL" exec --timeout 600 "${o[@]}" "$S" -- "$@"
}
# The slot's standby machine boots the range beside the seat until its state is saved
# (section 6 resets from it): wait for it, so that the checks below (hydra's SSH logins
# time out) do not share the two cores with a second TCG boot.
field() { "$CTL" --json status "$S" | json_field "d.get('$1', '')"; }
s0=$(date +%s)
for _ in $(seq 1 900); do [[ $(field warm_standby) == ready ]] && break; sleep 1; done
diag "the standby's saved state: '$(field warm_standby)' after $(($(date +%s) - s0)) s more"
out=$(x docker images --format '{{.Repository}}:{{.Tag}}' 2>"$t/out" | sort | tr '\n' ' ')
[[ $out == "range/attacker:latest range/backend:latest range/sensor:latest range/victim:latest " ]] &&
	ok "the four images were in the guest's docker store from the build (no registry, no load at boot): $out" ||
	{ not_ok "the four range images in docker images (got '$out')"; diag_file "$t/out"; }
out=$(x /usr/lib/seatd/compose-ready 2>&1; echo "rc=$?")
[[ $out == rc=0 ]] && ok "compose-ready: every compose service running, healthy where it has a healthcheck" ||
	not_ok "compose-ready passes in the READY seat (got '$out')"
out=$(x docker ps --format '{{.Names}} {{.Status}}' 2>"$t/out" | sort | tr '\n' ';')
diag "containers: $out"
[[ $out == *"attacker Up"* && $out == *"backend Up"*"(healthy)"* && $out == *"sensor Up"*"(healthy)"* && $out == *"victim Up"*"(healthy)"* ]] &&
	ok "attacker, backend, sensor and victim are up (backend, sensor and victim healthy)" ||
	not_ok "the four containers are up and healthy (got '$out')"

# ---------------------------------------------------------------- 4. the range works
ATT=172.30.10.10 VIC=172.30.10.20 VIC_INT=172.30.20.20 BACK=172.30.20.30
s0=$(date +%s)
x docker exec attacker nmap -n -Pn -sS -p 1-1024 -oG - "$VIC" >"$t/nmap" 2>"$t/out"
rc=$?
nmap_s=$(($(date +%s) - s0))
if [[ $rc == 0 ]] && grep -q "Host: $VIC " "$t/nmap" && grep -Eq '(^|[ ,])22/open/tcp' "$t/nmap" && grep -Eq '(^|[ ,])80/open/tcp' "$t/nmap"; then
	ok "from the attacker, nmap finds the victim's 22 and 80 open ($nmap_s s): $(grep -o 'Ports: .*' "$t/nmap" | cut -c1-120)"
else
	not_ok "nmap from the attacker finds the victim's 22 and 80 (rc=$rc)"
	diag_file "$t/nmap" "$t/out"
fi

s0=$(date +%s)
x docker exec attacker hydra -l webadmin -P /range/wordlist.txt -t 4 -f -I "ssh://$VIC" >"$t/hydra" 2>"$t/out"
rc=$?
hydra_s=$(($(date +%s) - s0))
if grep -Eq "\[22\]\[ssh\] host: $VIC +login: webadmin +password: sunshine" "$t/hydra"; then
	ok "hydra from the attacker finds the weak SSH password ($hydra_s s): $(grep -E 'login: webadmin' "$t/hydra")"
else
	not_ok "hydra finds webadmin's weak password (rc=$rc)"
	diag_file "$t/hydra" "$t/out"
fi

# The sensor watches br-dmz (suricata 7, af-packet): the scan above is its rule 9000001
# (many SYNs from one source), hydra's logins its rule 9000002. eve.json is on the
# guest's /var/log, in the seat's evidence_paths (section 6 opens it from the archive).
EVE=/var/log/range/suricata/eve.json
for _ in $(seq 1 60); do
	x grep -c '"signature_id":9000001' "$EVE" >"$t/eve-n" 2>/dev/null
	[[ $(<"$t/eve-n") =~ ^[1-9] ]] && break
	sleep 2
done
x grep -m3 '"event_type":"alert"' "$EVE" >"$t/eve" 2>&1
if [[ $(<"$t/eve-n") =~ ^[1-9] ]] && grep -q "\"src_ip\":\"$ATT\"" "$t/eve" && grep -q "\"dest_ip\":\"$VIC\"" "$t/eve"; then
	ok "suricata logs the scan in eve.json: $(<"$t/eve-n") alerts 'RANGE port scan' from $ATT to $VIC"
else
	not_ok "suricata logs the scan in eve.json (alerts of rule 9000001: '$(<"$t/eve-n")')"
	diag_file "$t/eve"
	x docker logs --tail 30 sensor 2>&1 | diag_file /dev/stdin
fi

get_flag='exec 3<>/dev/tcp/'$BACK'/8080 && printf "GET /flag HTTP/1.0\r\n\r\n" >&3 && cat <&3'
out=$(x docker exec victim timeout 20 bash -c "$get_flag" 2>"$t/out")
[[ $out == *'"flag": "FLAG{purple-range-pivot}"'* && $out == *"\"served_to\": \"$VIC_INT\""* ]] &&
	ok "the backend answers the victim on the internal network (served to $VIC_INT)" ||
	{ not_ok "the backend answers the victim (got '$out')"; diag_file "$t/out"; }
out=$(x docker exec attacker curl -sS -m 10 "http://$BACK:8080/flag" 2>&1; echo "rc=$?")
[[ $out != *FLAG* && $out == *rc=[1-9]* ]] && ok "the attacker (DMZ only) gets no answer from the backend: $(tr '\n' ' ' <<<"$out")" ||
	not_ok "the attacker reaches no backend (got '$out')"
out=$(x docker exec attacker curl -sS -m 10 http://backend:8080/flag 2>&1; echo "rc=$?")
[[ $out != *FLAG* && $out == *rc=[1-9]* ]] && ok "nor by its name: $(tr '\n' ' ' <<<"$out")" ||
	not_ok "the attacker reaches no backend by name (got '$out')"
out=$(x cat /var/log/range/backend/backend.log 2>"$t/out")
peers=$(awk '{print $2}' <<<"$out" | sort -u | tr '\n' ' ')
[[ $peers == "$VIC_INT " ]] && ok "the backend's log: every request came from the victim ($peers)" ||
	not_ok "the backend's log shows only the victim as a peer (got '$peers')"

# ---------------------------------------------------------------- 5. container egress
# Traffic that leaves the guest from a container (docker masquerades the DMZ behind the
# guest's address) meets the host's egress filter like any other traffic of the seat: the
# profile's server is reached from the attacker, the blocked one is dropped, and the seat's
# denied counter moves.
denied() { "$CTL" --json status "$S" | json_field 'd["network"]["denied_packets"]'; }
out=$(x docker exec attacker curl -sS -m 20 "http://$WORLD_ALLOWED:8080/ok" 2>&1; echo "rc=$?")
[[ $out == *seatd-world* && $out == *rc=0 ]] &&
	ok "from the attacker container, the profile's server $WORLD_ALLOWED:8080 answers through the seat's filter" ||
	{ not_ok "the attacker container reaches the allowed server $WORLD_ALLOWED:8080 (got '$out')"; "$CTL" status "$S" | diag_file /dev/stdin; }
before=$(denied)
out=$(x docker exec attacker curl -sS -m 8 "http://$WORLD_BLOCKED:8080/" 2>&1; echo "rc=$?")
wait_until 'after=$(denied); ((${after:-0} > before))' # (counted as the frames leave the guest)
after=$(denied)
[[ $out != *seatd-world* && $out == *rc=[1-9]* && $after -gt $before ]] &&
	ok "from the attacker container, the blocked server $WORLD_BLOCKED:8080 is dropped by the host (denied $before -> $after)" ||
	not_ok "the attacker container's traffic to $WORLD_BLOCKED:8080 is dropped and counted (denied $before -> $after, got '$out')"

# ---------------------------------------------------------------- 6. warm reset: a new session
# The first session leaves a file, a container and a log line of its own; the seat is reset
# from its saved state (made beside it, once the range was up in the standby machine). The
# new session has none of them, and the first one's archive opens with the range's logs and
# suricata's eve.json.
mark=alice-$RANDOM$RANDOM
x sh -c "echo $mark >/root/alice.txt && echo $mark >>/var/log/range/alice.log &&
	docker run -d --name alice-box range/attacker sleep infinity >/dev/null && sync && echo written" >"$t/out" 2>&1
grep -q written "$t/out" && ok "the first session wrote /root/alice.txt, /var/log/range/alice.log and started a container alice-box" ||
	{ not_ok "the first session leaves a file, a log line and a container"; diag_file "$t/out"; }
# The seed's acceptance tests (../shared/seeds, as lifecycle.sh runs them on the test
# image) on the range image: a tool run as the guest's unprivileged user finds the system
# read-only and /tmp writable; what it writes is gone after the reset; every call of the
# session is in its audit log (checked in the archive below).
out=$(x --user 65534 -- sh -c 'id -u; echo x >/usr/local/bin/pwned-range' 2>&1; echo "rc=$?")
x test -e /usr/local/bin/pwned-range
rc=$?
[[ $out == 65534*"Permission denied"* && $out != *rc=0 && $rc == 1 ]] &&
	ok "seed acceptance 1: a tool as the guest's user 65534 cannot write /usr/local/bin ($(grep -o 'Permission denied' <<<"$out" | head -n1))" ||
	not_ok "seed acceptance 1: writing /usr/local/bin as 65534 is denied (got '$(tr '\n' ' ' <<<"$out")', test -e rc=$rc)"
out=$(x --user 65534 -- sh -c "echo $mark >/tmp/volatile-range && cat /tmp/volatile-range" 2>&1)
[[ $out == "$mark" ]] && ok "the same user writes /tmp (/tmp/volatile-range)" ||
	not_ok "the same user writes /tmp (got '$out')"
calls_s1=$(grep -c . "$t/calls")
standby=$(field warm_standby)
s0=$(date +%s%N)
"$CTL" reset "$S" >"$t/out" 2>&1
rc=$?
reset_ms=$((($(date +%s%N) - s0) / 1000000))
mode=$(field reset_mode)
[[ $rc == 0 && $mode == warm ]] && ok "reset $S: warm, READY again in $reset_ms ms" ||
	{ not_ok "reset $S warm (rc=$rc, mode '$mode', standby was '$standby', reason '$(field reset_reason)')"; diag_file "$t/out"; }
out=$(x sh -c 'ls /root; cat /var/log/range/alice.log 2>/dev/null; docker ps -a --format "{{.Names}}"; grep -c . /var/log/range/backend/backend.log 2>/dev/null' 2>&1)
[[ $out != *alice* && $out == *attacker* && $out == *victim* && $out == *backend* ]] &&
	ok "the new session has none of the first one's file, log line or container (the range is there): $(tr '\n' ' ' <<<"$out")" ||
	not_ok "the new session has nothing of the first one (got '$(tr '\n' ' ' <<<"$out")')"
out=$(x sh -c 'ls /tmp/volatile-range /usr/local/bin/pwned-range 2>&1; echo listed')
if [[ $out == *volatile-range*"No such file"*"pwned-range"*"No such file"*listed ]]; then
	ok "seed acceptance 3: the first session's /tmp/volatile-range is gone after the reset"
else
	not_ok "seed acceptance 3: the first session's /tmp file is gone after the reset (got '$(tr '\n' ' ' <<<"$out")')"
fi
arch=
for _ in $(seq 1 600); do arch=$(ls "$t/archives/$S-g1-"*.seatdev 2>/dev/null | head -n1); [[ -n $arch ]] && break; sleep 1; done
if [[ -n $arch ]] && "$CTL" evidence open "$arch" --key "$t/facilitator.key" --out "$t/opened" >"$t/out" 2>&1; then
	member() { ls "$t/opened" | grep -E -- "^[0-9]{4}-$1\$" | head -n1; }
	b=$(member guest_var_log_range_backend_backend.log) a=$(member guest_var_log_range_alice.log)
	[[ -n $b && $(cat "$t/opened/$b") == *"$VIC_INT"* && -n $a && $(cat "$t/opened/$a") == "$mark" ]] &&
		ok "the first session's archive opens and holds the range's logs (backend's log with the victim's request, $mark)" ||
		{ not_ok "the first session's archive holds the range's logs (backend '$b', alice '$a')"; ls "$t/opened" | head -n 40 | diag_file /dev/stdin; }
	au=$(ls "$t/opened" | grep -m1 audit)
	if [[ -n $au ]] && python3 - "$t/opened/$au" "$calls_s1" "$t/calls" >"$t/out" 2>&1 <<'EOF'; then
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
starts = [r for r in recs if r["type"] == "exec.start"]
ends = [r["data"]["start"] for r in recs if r["type"] == "exec.end"]
assert sorted(ends) == sorted(r["seq"] for r in starts), ("every exec.start has its exec.end", len(starts), len(ends))
if len(starts) != int(sys.argv[2]):
    print("calls made:", *open(sys.argv[3]).read().splitlines()[:int(sys.argv[2])], sep="\n  ")
    print("exec.start records:", *(" ".join(r["data"]["argv"]) for r in starts), sep="\n  ")
    print("record types:", " ".join(r["type"] for r in recs))
assert len(starts) == int(sys.argv[2]), ("calls made", sys.argv[2], "exec.start records", len(starts))
as_user = [r["data"] for r in starts if r["data"].get("guest_uid") == 65534]
assert len(as_user) == 2 and "/usr/local/bin/pwned-range" in " ".join(as_user[0]["argv"]), as_user
print(len(starts))
EOF
		ok "seed acceptance 2: the archive's audit log holds every call of the first session ($(<"$t/out") exec.start, each with its exec.end; the two as user 65534 say so)"
	else
		not_ok "seed acceptance 2: every call of the first session ($calls_s1) is in the archive's audit log ('$au')"
		diag_file "$t/out"
	fi
	e=$(member guest_var_log_range_suricata_eve.json)
	[[ -n $e ]] && grep -q '"signature_id":9000001' "$t/opened/$e" &&
		ok "the archive holds suricata's eve.json with the scan's alerts ($e)" ||
		{ not_ok "the archive holds suricata's eve.json with the scan's alerts ('$e')"; ls "$t/opened" | grep -i -e suri -e eve | diag_file /dev/stdin; }
else
	not_ok "the first session's archive ($S-g1-*.seatdev) is sealed and opens (archive '${arch:-none}')"
	diag_file "$t/out"
fi

# ---------------------------------------------------------------- 7. release
"$CTL" release "$S" >"$t/out" 2>&1 && ok "release $S" || { not_ok "release $S"; diag_file "$t/out"; }
[[ -z $(seat_domains) ]] && ok "no domain left after release" || not_ok "no domain left after release: $(seat_domains)"
diag "range: image_build_s=$build_s cold_ready_ms=$ready_ms nmap_s=$nmap_s hydra_s=$hydra_s"
tap_end
