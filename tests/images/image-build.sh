#!/usr/bin/env bash
# image-build.sh: seat-image build (images/seat-image, docs/image-recipes.md) end to end:
# malformed recipes are refused before anything is written; the debian-minimal recipe
# (Debian 12, systemd as init, guest-init --agent as a unit, a tiny service) builds into a
# signed bundle (cached under a key of the recipe and its package list: a fresh machine
# builds it, a rerun copies it), publishes the same manifest digests again, imports into a
# private seatd, and boots in a real TCG seat where exec works as under busybox. Speaks TAP.
#   usage: image-build.sh BUILD_DIR
# The cache: SEAT_IMAGE_CACHE (default /var/cache/seatd-images, like scripts/fresh-root's).
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite image-build
need_cmd -h "apt-get install mmdebstrap e2fsprogs qemu-utils libvirt-clients" mmdebstrap mke2fs debugfs qemu-img virsh python3
need_kernel
# scripts/fresh-root runs the suites in a network namespace of its own: no mirror there.
[[ -z ${SEATD_FRESH_ROOT-} ]] || skip_all "the fresh root has no network for mmdebstrap to fetch Debian packages"
need_libvirt --start

seat_image_setup
RECIPE_DIR=$HARNESS_SRC/images/recipes/debian-minimal
test_key

# ---------------------------------------------------------------- 1. malformed recipes
# Each is refused with FILE:LINE and the value, and leaves neither an output directory nor
# a cache directory behind.
# bad NAME EXPECTED-MESSAGE-REGEX: the recipe on stdin, built with the suite's signing key.
bad() { recipe_refused "$1" "$2" --sign-key "$t/test.key"; }
bad unknown "unknown.conf:3: unknown key 'imgae'" <<'EOF'
name = x
base = debian-12
imgae = y
EOF
bad compose "compose.conf:4: compose file 'compose.yaml' is not a regular file" <<'EOF'
name = x
base = debian-12
ready_check = true
compose = compose.yaml
EOF
mkdir -p "$t/bad" && printf 'services: {}\n' >"$t/bad/range.yaml"
bad range "range.conf: 'compose' without any 'container_image'" <<'EOF'
name = x
base = debian-12
compose = range.yaml
EOF
bad escape "escape.conf:4: bad copy source '\.\./\.\./etc/shadow'" <<'EOF'
name = x
base = debian-12
ready_check = true
copy = ../../etc/shadow /etc/shadow
EOF
bad glob "glob.conf:3: bad packages '\*'" <<'EOF'
name = x
base = debian-12
packages = curl *
EOF
bad no-ready "no-ready.conf: no 'ready_check'" <<'EOF'
name = x
base = debian-12
EOF
bad not-kv "not-kv.conf:2: not KEY = VALUE" <<'EOF'
name = x
base debian-12
EOF
bad twice "twice.conf:2: 'name' given twice" <<'EOF'
name = x
name = y
EOF
bad memory "memory.conf:4: bad memory_mib '64'" <<'EOF'
name = x
base = debian-12
ready_check = true
memory_mib = 64
EOF
bad oci "oci.conf:2: OCI archive 'range.tar' is not a regular file" <<'EOF'
name = x
base = oci:range.tar
EOF
bad oci-escape "oci-escape.conf:2: bad OCI archive '\.\./\.\./x\.tar'" <<'EOF'
name = x
base = oci:../../x.tar
EOF
mkdir -p "$t/bad" && : >"$t/bad/empty.tar"
bad oci-packages "oci-packages.conf: 'packages' needs base = debian-12" <<'EOF'
name = x
base = oci:empty.tar
ready_check = true
packages = curl
EOF
bad nul "nul.conf: holds NUL bytes" < <(printf 'name = x\0y\nbase = debian-12\nready_check = true\n')
bad huge "huge.conf: 70000 bytes, more than a recipe may have" < <(head -c 70000 /dev/zero | tr '\0' '#')

# ---------------------------------------------------------------- 2. build, cache, digests
recipe_build_signed "$RECIPE_DIR"
diag "packages: $(wc -l <"$t/img/packages.txt") ($(grep -E '^(systemd|udev|procps) ' "$t/img/packages.txt" | tr '\n' ' '))"

s0=$(date +%s)
si "$RECIPE_DIR" --out "$t/img2" --sign-key "$t/test.key" --cache "$CACHE" >"$t/out" 2>&1
rc=$?
again_s=$(($(date +%s) - s0))
# What the manifest says of the image (its files' digests, boot, evidence), without the
# signing dates (created, expires): those are the signer's, not the image's.
digests() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({k: v for k, v in d.items() if k not in ("created", "expires")}, sort_keys=True))' "$1"; }
if [[ $rc == 0 ]] && grep -q "using the cached image" <("$SI" build "$RECIPE_DIR" --out "$t/img3" --cache "$CACHE" \
	--guest-init "$GUEST_INIT" --tools "$build/images:$build/signing" 2>&1) &&
	[[ $(digests "$t/img/manifest.json") == "$(digests "$t/img2/manifest.json")" ]]; then
	ok "a rebuild of the same recipe comes from the cache in $again_s s, with the same manifest digests"
else
	not_ok "a rebuild of the same recipe comes from the cache with the same manifest digests (rc=$rc)"
	diag_file "$t/out"
fi
diag "manifest digest: $(sha256sum <"$t/img/manifest.json" | cut -c1-16), root.qcow2 $(sha256sum <"$t/img/root.qcow2" | cut -c1-16)"

# A copy into the root through one of its absolute symlinks (/etc/alternatives/awk ->
# /usr/bin/mawk) would land on this host: refused once the root exists, nothing written.
mkdir -p "$t/escape2"
printf 'payload\n' >"$t/escape2/payload"
cat >"$t/escape2/recipe.conf" <<'EOF'
name = escape-through-symlink
base = debian-12
packages = procps
copy = payload /etc/alternatives/awk 0755
ready_check = true
EOF
host_awk=$(sha256sum /usr/bin/mawk 2>/dev/null)
entries=$(ls -A "$CACHE" | sort)
si "$t/escape2" --out "$t/escape2-img" --cache "$CACHE" >"$t/out" 2>&1
rc=$?
if [[ $rc != 0 ]] && grep -q "copy destination '/etc/alternatives/awk' leads out of the image's root" "$t/out" &&
	[[ ! -e $t/escape2-img && $(ls -A "$CACHE" | sort) == "$entries" && $(sha256sum /usr/bin/mawk 2>/dev/null) == "$host_awk" ]]; then
	ok "a copy through an absolute symlink of the root is refused; no output, no cache entry, the host's file untouched"
else
	not_ok "a copy through an absolute symlink of the root is refused and writes nothing (rc=$rc)"
	diag_file "$t/out"
fi

# ---------------------------------------------------------------- 3. boot it in a seat
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false
seatd_start
"$CTL" -q image import "$t/img/manifest.json" >"$t/out" 2>&1 && ok "seatctl image import takes the bundle" ||
	{ not_ok "seatctl image import takes the bundle"; diag_file "$t/out"; bail "image import failed"; }

# Provision over the control socket itself, to keep every progress line seatd sends while
# the seat boots (seatctl shows them only on a terminal).
cat >"$t/provision.py" <<'PY'
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["SEATD_SOCKET"])
f = s.makefile("rwb")
def send(i, method, params):
    f.write((json.dumps({"id": i, "method": method, "params": params}) + "\n").encode()); f.flush()
def reply(i, progress):
    while True:
        m = json.loads(f.readline())
        if m.get("id") != i:
            continue
        if m.get("type") == "progress":
            progress.write(m["progress"]["what"] + "\n"); progress.flush()
        elif m.get("type") in ("result", "error"):
            return m
send(1, "hello", {"version": 1}); reply(1, sys.stderr)
send(2, "seat.provision", {"image": sys.argv[1], "participant": "alice"})
with open(sys.argv[2], "w") as p:
    m = reply(2, p)
if m["type"] == "error":
    print("error: " + m["error"]["message"]); sys.exit(1)
print(m["result"]["seats"][0]["id"])
PY
provision() { python3 "$t/provision.py" "$@"; }

s0=$(date +%s)
S=$(provision debian-minimal "$t/progress" 2>"$t/out")
rc=$?
boot_s=$(($(date +%s) - s0))
if [[ $rc == 0 && $S =~ ^s[0-9a-f]{8}$ ]]; then
	ok "provision --image debian-minimal: seat $S READY after $boot_s s (TCG, systemd)"
else
	not_ok "provision --image debian-minimal (rc=$rc): $S"
	diag_file "$t/out" "$t/progress"
	bail "no seat"
fi
diag_file "$t/progress"
grep -Eq "^waiting for the image's readiness check: [0-9]+ of 300 s, [0-9]+ tries, last exit 1$" "$t/progress" &&
	ok "while the readiness check failed, the provision's progress said so (what status shows)" ||
	not_ok "the provision's progress showed the wait for the readiness check"
grep -Eq "seat '$S': the image's readiness check passed after ([2-9]|[1-9][0-9]+) tries" "$t/seatd.log" &&
	ok "seatd marked the seat READY only after the check passed, not at the agent's hello ($(grep -Eo "passed after [0-9]+ tries" "$t/seatd.log" | tail -n1))" ||
	not_ok "seatd's log says the readiness check passed after more than one try"
check_cmd "status shows the seat READY" bash -c "'$CTL' status $S | grep -E '^$S +ready '"

x() { "$CTL" exec "$S" -- "$@"; }
out=$(x cat /proc/1/comm 2>"$t/out")
[[ $out == systemd ]] && ok "PID 1 in the seat is systemd (guest-init handed it over: seatd.init=)" ||
	{ not_ok "PID 1 in the seat is systemd (got '$out')"; diag_file "$t/out"; }
out=$(x systemctl show -P MainPID seatd-agent.service 2>"$t/out")
agent=$(x cat "/proc/$out/cmdline" 2>>"$t/out" | tr '\0' ' ')
[[ $agent == "/usr/sbin/guest-init --agent " ]] && ok "the agent is guest-init --agent, the main process of seatd-agent.service" ||
	{ not_ok "the agent is guest-init --agent of seatd-agent.service (pid '$out', cmdline '$agent')"; diag_file "$t/out"; }
x sh -c 'echo to-out; echo to-err >&2; exit 3' >"$t/o" 2>"$t/e"
rc=$?
[[ $rc == 3 && $(cat "$t/o") == to-out && $(cat "$t/e") == to-err ]] &&
	ok "exec: stdout and stderr on their own fds, exit code 3 passes through (as under busybox)" ||
	not_ok "exec: stdout and stderr, exit code 3 (rc=$rc, out '$(cat "$t/o")', err '$(cat "$t/e")')"
out=$(echo x | x cat 2>"$t/out")
[[ $out == x ]] && ok "exec forwards stdin" || not_ok "exec forwards stdin (got '$out')"
out=$(x systemctl is-active hello-seat.service 2>"$t/out")
[[ $out == active ]] && ok "the recipe's unit hello-seat.service is enabled and running" ||
	{ not_ok "hello-seat.service running (got '$out')"; diag_file "$t/out"; }
out=$(x sh -c 'hostname; cat /etc/seatd/ready-check' 2>"$t/out")
[[ $out == "seat-$S"$'\n'"$(sed -n 's/^ready_check = //p' "$RECIPE_DIR/recipe.conf")" ]] &&
	ok "configure reached the systemd image (hostname seat-$S); the readiness check is in the image" ||
	{ not_ok "hostname and readiness check in the image (got '$out')"; diag_file "$t/out"; }
# The order in the guest's own log (checks and the service append to one file): failed
# checks, then the service's mark, then the check that passed (one that ran between the
# log line and the mark file fails too: the service writes the line first).
out=$(x cat /run/hello-seat/log 2>"$t/out" | tr '\n' ' ')
[[ $out =~ ^(check )+ready\ (check )+$ ]] && ok "in the guest: checks failed until the service was up, the passing one came after its mark ($out)" ||
	{ not_ok "the guest's log shows failed checks, the mark, one passing check (got '$out')"; diag_file "$t/out"; }
out=$(x dpkg-query -W -f '${Version}' procps 2>"$t/out")
[[ -n $out && $(grep '^procps ' "$t/img/packages.txt") == "procps $out "* ]] &&
	ok "the recipe's package (procps $out) is installed, as packages.txt records" ||
	{ not_ok "procps installed as packages.txt says (got '$out')"; diag_file "$t/out"; }

# A reset boots the seat again (cold: warm_reset = false) and waits for the check again:
# seatctl status, asked while it waits, shows the wait.
"$CTL" reset "$S" >"$t/reset.out" 2>&1 &
rpid=$!
seen=
while kill -0 "$rpid" 2>/dev/null; do
	"$CTL" status "$S" >"$t/status" 2>/dev/null
	grep -q "progress: waiting for the image's readiness check: [0-9]* of 300 s, [0-9]* tries, last exit 1" "$t/status" &&
		{ seen=$(grep -E "^$S " "$t/status"; grep "progress:" "$t/status"); }
	sleep 0.3
done
wait "$rpid"
rc=$?
[[ $rc == 0 && -n $seen ]] && ok "seatctl status during a reset shows the seat waiting for its readiness check" ||
	{ not_ok "seatctl status during a reset shows the wait (reset rc=$rc)"; diag_file "$t/reset.out" "$t/status"; }
diag "$(tr "\n" " " <<<"$seen")"
out=$("$CTL" --json status "$S" 2>"$t/out" | json_field 'd["state"] + " " + str(d.get("progress"))')
[[ $out == "ready None" ]] && ok "after the reset: READY, no progress left in its status" || not_ok "after the reset: READY without progress (got '$out')"

"$CTL" release "$S" >"$t/out" 2>&1 && ok "release $S" || { not_ok "release $S"; diag_file "$t/out"; }
[[ -z $(seat_domains) ]] && ok "no domain left after release" || not_ok "no domain left after release: $(seat_domains)"

# ---------------------------------------------------------------- 4. a check that never passes
# The same packages (the cached Debian root: only the image is made anew), a check that
# always fails; seatd restarted with a short ready_timeout.
mkdir -p "$t/never"
cat >"$t/never/recipe.conf" <<'EOF'
name = never-ready
base = debian-12
packages = procps
ready_check = echo "never-ready: the range is still coming up"; exit 7
EOF
si "$t/never" --out "$t/never-img" --sign-key "$t/test.key" --cache "$CACHE" >"$t/out" 2>&1 &&
	"$CTL" -q image import "$t/never-img/manifest.json" >>"$t/out" 2>&1 ||
	{ diag_file "$t/out"; bail "the never-ready image did not build or import"; }
seatd_stop
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false ready_timeout=15
seatd_start
out=$(provision never-ready "$t/progress2" 2>"$t/out")
rc=$?
if [[ $rc != 0 && $out == *"readiness check (/etc/seatd/ready-check) did not pass within 15 s (ready_timeout in seatd.conf)"* &&
	$out == *"the last exited 7 with output 'never-ready: the range is still coming up"* ]]; then
	ok "a readiness check that never passes fails the boot after ready_timeout, its exit code and output in the error"
else
	not_ok "a readiness check that never passes fails the boot with its output (rc=$rc): $out"
	diag_file "$t/out"
fi
diag "$out"
[[ -z $(seat_domains) && -z $(seatd_seat_ids) && -z $(ls -A "$t/state/seats" 2>/dev/null) ]] &&
	ok "nothing of the failed seat is left (no domain, no seat, no seat directory)" ||
	not_ok "nothing of the failed seat is left: domains '$(seat_domains)', seats '$(seatd_seat_ids)', dirs '$(ls -A "$t/state/seats")'"
tap_end
