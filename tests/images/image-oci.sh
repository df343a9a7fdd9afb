#!/usr/bin/env bash
# image-oci.sh: seat-image build with an OCI image archive as the base (base = oci:PATH,
# images/seat-oci, docs/image-recipes.md). The archives are made here (mkoci.sh: tar,
# sha256sum, a few lines of JSON; no registry, no docker): hostile ones are refused before
# anything is written; a docker-save archive of a busybox root (no systemd) boots with
# guest-init as PID 1; an OCI layout of the cached Debian root (seat-image's own base tar)
# plus a gzip and a zstd layer with whiteouts and an opaque directory builds twice with
# the same manifest digests and boots under systemd; in both guests the layers' whiteouts
# are checked. Speaks TAP.
#   usage: image-oci.sh BUILD_DIR
# The Debian root: the newest base-*.tar in SEAT_IMAGE_CACHE (default
# /var/cache/seatd-images), made by building debian-minimal when there is none.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
harness_vm_suite image-oci
need_cmd -h "apt-get install e2fsprogs qemu-utils libvirt-clients python3 zstd busybox-static" \
	mke2fs debugfs qemu-img virsh python3 zstd busybox tar gzip
need_kernel
[[ -z ${SEATD_FRESH_ROOT-} ]] || skip_all "the fresh root has no network for mmdebstrap (the Debian root of the OCI archive)"
need_libvirt --start

seat_image_setup
MKOCI=$HARNESS_SRC/tests/images/mkoci.sh
test_key
TAR=(tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1)

# ---------------------------------------------------------------- the layers
# A busybox root (the test image's kind: no systemd, no libc), and a second layer that
# deletes a file of the first (.wh.gone), makes /etc/skel opaque (its lower files go) and
# adds files; a third (zstd) adds one more.
L=$t/layers
mkdir -p "$L/bb/bin" "$L/bb/etc/skel/olddir" "$L/bb/root" "$L/bb/tmp" "$L/l2/etc/skel" "$L/l3/usr/local/bin"
cp /bin/busybox "$L/bb/bin/busybox"
for a in $(busybox --list); do [[ $a == busybox ]] || ln -s busybox "$L/bb/bin/$a"; done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$L/bb/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$L/bb/etc/group"
echo seat >"$L/bb/etc/hostname"
echo lower >"$L/bb/etc/gone"
echo lower >"$L/bb/etc/skel/.profile"
echo lower >"$L/bb/etc/skel/olddir/x"
chmod 1777 "$L/bb/tmp"
echo layer2 >"$L/l2/etc/oci-layer2"
echo layer2 >"$L/l2/etc/skel/layer2-only"
: >"$L/l2/etc/skel/.wh..wh..opq"
: >"$L/l2/etc/.wh.gone"
: >"$L/l2/etc/.wh.issue.net" # (the Debian root's; nothing in the busybox one)
printf '#!/bin/sh\necho layer3\n' >"$L/l3/usr/local/bin/oci-layer3"
chmod 0755 "$L/l3/usr/local/bin/oci-layer3"
"${TAR[@]}" -C "$L/bb" -cf "$L/bb.tar" .
"${TAR[@]}" -C "$L/l2" -cf - . | gzip -n >"$L/l2.tar.gz"
"${TAR[@]}" -C "$L/l3" -cf - . | zstd -q >"$L/l3.tar.zst"

# ---------------------------------------------------------------- 1. hostile archives
# Each refused with the reason, before a byte of output: no output directory, no cache
# entry, no work directory left in the cache, nothing outside the build directory.
mkdir -p "$t/host-target" "$t/canary"
echo keep >"$t/canary/keep" # what a whiteout through a symlink would delete
# evil_layer NAME: a layer tar with what its name says, made by python's tarfile (GNU tar
# will not write most of these).
evil_layer() {
	python3 - "$1" "$2" "$t/host-target" <<'PY'
import io, sys, tarfile
kind, out, host = sys.argv[1:]
tf = tarfile.open(out, "w", format=tarfile.PAX_FORMAT)
def add(name, data=b"x", **kw):
    ti = tarfile.TarInfo(name)
    for k, v in kw.items():
        setattr(ti, k, v)
    if ti.type == tarfile.REGTYPE:
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    else:
        tf.addfile(ti)
if kind == "dotdot":
    add("etc/../../escaped")
elif kind == "absolute":
    add("/etc/absolute")
elif kind == "abs-symlink":   # a symlink to a host directory, then a file through it
    add("etc/evil", type=tarfile.SYMTYPE, linkname=host)
    add("etc/evil/pwned")
elif kind == "rel-symlink":
    add("etc/rel", type=tarfile.SYMTYPE, linkname="../../../../../../../../.." + host)
    add("etc/rel/pwned")
elif kind == "hardlink":
    add("etc/hl", type=tarfile.LNKTYPE, linkname="../../../../etc/shadow")
elif kind == "wh-symlink":    # a whiteout through a symlink to a host directory
    add("etc/evil", type=tarfile.SYMTYPE, linkname=host + "/../canary")
    add("etc/evil/.wh.keep", b"")
elif kind == "opq-symlink":   # an opaque marker in a symlink to a host directory
    add("etc/evil", type=tarfile.SYMTYPE, linkname=host + "/../canary")
    add("etc/evil/.wh..wh..opq", b"")
elif kind == "newline":
    add("etc/a\nwrite /etc/shadow x")
tf.close()
PY
}
CACHE_NEG=$t/neg-cache
bad_oci() { # NAME EXPECTED-REGEX ARCHIVE [RECIPE-LINE]
	local name=$1 want=$2 archive=$3 d=$t/neg/$1
	mkdir -p "$d"
	cp "$archive" "$d/image.tar"
	printf 'name = %s\nbase = oci:image.tar\nready_check = true\n%s\n' "$name" "${4-}" >"$d/recipe.conf"
	si "$d" --out "$d/out" --sign-key "$t/test.key" --cache "$CACHE_NEG" >"$t/out" 2>&1
	local rc=$?
	if [[ $rc != 0 ]] && grep -Eq -- "$want" "$t/out" && [[ ! -e $d/out && -z $(ls -A "$CACHE_NEG" 2>/dev/null) &&
		-z $(ls -A "$t/host-target") ]]; then
		ok "OCI archive ($name) refused, nothing written: $(grep -o 'seat-oci: error: .*' "$t/out" | cut -c1-160)"
	else
		not_ok "OCI archive ($name) refused with /$want/ and nothing written (rc=$rc, cache: $(ls -A "$CACHE_NEG" 2>/dev/null))"
		diag_file "$t/out"
	fi
}
N=$t/neg-archives
mkdir -p "$N"
MKOCI_CORRUPT=2 "$MKOCI" oci "$N/corrupt.tar" "$L/bb.tar" "$L/l2.tar.gz"
bad_oci corrupt-blob "layer 2 of 2: the blob 'blobs/sha256/[0-9a-f]{64}' has sha256 sha256:[0-9a-f]{64}, not its digest" "$N/corrupt.tar"
MKOCI_CORRUPT=1 "$MKOCI" docker "$N/corrupt-docker.tar" "$L/bb.tar" "$L/l2.tar.gz"
bad_oci corrupt-docker "layer 1 of 2: its content has sha256 sha256:[0-9a-f]{64}, not the config's diff_id" "$N/corrupt-docker.tar"
MKOCI_DROP=2 "$MKOCI" oci "$N/missing.tar" "$L/bb.tar" "$L/l2.tar.gz"
bad_oci missing-blob "layer 2 of 2 blob 'blobs/sha256/[0-9a-f]{64}' is missing from the archive" "$N/missing.tar"
for k in dotdot absolute abs-symlink rel-symlink hardlink wh-symlink opq-symlink newline; do
	evil_layer "$k" "$N/$k-layer.tar"
	"$MKOCI" oci "$N/$k.tar" "$L/bb.tar" "$N/$k-layer.tar"
done
bad_oci dotdot "layer 2 of 2: name 'etc/\.\./\.\./escaped' leads out of the root \('\.\.'\)" "$N/dotdot.tar"
bad_oci absolute "layer 2 of 2: absolute name '/etc/absolute'" "$N/absolute.tar"
bad_oci abs-symlink "layer 2 of 2: 'etc/evil/pwned' goes through the symlink 'etc/evil' of the root" "$N/abs-symlink.tar"
bad_oci rel-symlink "layer 2 of 2: 'etc/rel/pwned' goes through the symlink 'etc/rel' of the root" "$N/rel-symlink.tar"
bad_oci hardlink "layer 2 of 2: name '\.\./\.\./\.\./\.\./etc/shadow' leads out of the root" "$N/hardlink.tar"
bad_oci wh-symlink "layer 2 of 2: 'etc/evil/keep' goes through the symlink 'etc/evil' of the root" "$N/wh-symlink.tar"
bad_oci opq-symlink "layer 2 of 2: opaque marker in 'etc/evil', which is not a directory" "$N/opq-symlink.tar"
bad_oci newline "layer 2 of 2: name 'etc/a\\\\nwrite /etc/shadow x' holds a control character" "$N/newline.tar"
# The outer tar: a member that climbs out of it, and something that is no tar at all.
cp "$N/corrupt.tar" "$N/outer-dotdot.tar"
python3 -c 'import io, sys, tarfile
tf = tarfile.open(sys.argv[1], "a"); ti = tarfile.TarInfo("../../outside"); ti.size = 1
tf.addfile(ti, io.BytesIO(b"x")); tf.close()' "$N/outer-dotdot.tar"
bad_oci outer-dotdot "member name '\.\./\.\./outside' in the archive leads out of it" "$N/outer-dotdot.tar"
# A layer that unpacks to more than the disk holds (300 MiB of zeros, 300 KiB of gzip).
python3 -c 'import sys, tarfile
tf = tarfile.open(sys.argv[1], "w"); ti = tarfile.TarInfo("zeros"); ti.size = 300 << 20
tf.addfile(ti, open("/dev/zero", "rb")); tf.close()' "$N/zeros.tar"
gzip -1 "$N/zeros.tar"
"$MKOCI" oci "$N/bomb.tar" "$L/bb.tar" "$N/zeros.tar.gz"
rm -f "$N/zeros.tar.gz"
bad_oci too-big "the layers hold more than 268435456 bytes" "$N/bomb.tar" "disk_size = 256M"
echo 'not a tar' >"$N/text.tar"
bad_oci not-a-tar "cannot read '.*' as an uncompressed tar" "$N/text.tar"
[[ -z $(find "$t/neg" -name pwned) && -z $(ls -A "$t/host-target") && ! -e $t/escaped && ! -e /escaped &&
	$(cat "$t/canary/keep") == keep ]] &&
	ok "no hostile archive wrote anything outside its build directory" ||
	not_ok "a hostile archive wrote outside its build directory: $(find "$t" -name pwned -o -name escaped)"

# ---------------------------------------------------------------- 2. build the two images
# docker save's format, the busybox root: guest-init stays PID 1.
mkdir -p "$t/bb-recipe"
"$MKOCI" docker "$t/bb-recipe/busybox.tar" "$L/bb.tar" "$L/l2.tar.gz" "$L/l3.tar.zst"
cat >"$t/bb-recipe/recipe.conf" <<'EOF'
name = oci-busybox
base = oci:busybox.tar
ready_check = test -s /etc/oci-layer2
memory_mib = 256
disk_size = 256M
EOF
si "$t/bb-recipe" --out "$t/bb-img" --sign-key "$t/test.key" --cache "$t/cache" >"$t/out" 2>&1 &&
	ok "seat-image build: a docker-save archive (3 layers: tar, gzip, zstd) of a busybox root" ||
	{ not_ok "seat-image build of the docker-save busybox archive"; diag_file "$t/out"; }
grep -q 'seatd.init=' "$t/bb-img/image.json" &&
	not_ok "the busybox image's command line has no seatd.init= (no systemd in its root)" ||
	ok "the busybox image's command line has no seatd.init= (no systemd in its root: guest-init stays PID 1)"

# An OCI layout of the Debian root that seat-image itself makes (its cached base tar, used
# as the first layer as it is), the gzip and zstd layers on top.
base=$(ls -t "$CACHE"/base-*.tar 2>/dev/null | head -n1)
if [[ -z $base ]]; then
	need_cmd -h "apt-get install mmdebstrap" mmdebstrap
	si "$HARNESS_SRC/images/recipes/debian-minimal" --out "$t/dm" --cache "$CACHE" >"$t/out" 2>&1 ||
		{ diag_file "$t/out"; bail "no Debian root: building debian-minimal failed"; }
	base=$(ls -t "$CACHE"/base-*.tar | head -n1)
fi
diag "the Debian root: $base"
mkdir -p "$t/deb-recipe"
"$MKOCI" oci "$t/deb-recipe/debian.tar" "$base" "$L/l2.tar.gz" "$L/l3.tar.zst"
cat >"$t/deb-recipe/recipe.conf" <<'EOF'
name = oci-debian
base = oci:debian.tar
ready_check = test -x /usr/local/bin/oci-layer3
EOF
s0=$(date +%s)
si "$t/deb-recipe" --out "$t/deb-img" --sign-key "$t/test.key" --cache "$t/cache" >"$t/out" 2>&1
rc=$?
build_s=$(($(date +%s) - s0))
[[ $rc == 0 ]] && ok "seat-image build: an OCI layout (Debian root + gzip + zstd layers) in $build_s s" ||
	{ not_ok "seat-image build of the Debian OCI layout (rc=$rc)"; diag_file "$t/out"; bail "no image"; }
grep -q '"cmdline": ".* seatd.init=/lib/systemd/systemd"' "$t/deb-img/image.json" &&
	ok "the Debian image boots systemd (seatd.init=/lib/systemd/systemd)" || not_ok "the Debian image's cmdline names systemd"
[[ $(wc -l <"$t/deb-img/packages.txt") -gt 50 && $(grep -c '^systemd ' "$t/deb-img/packages.txt") == 1 ]] &&
	ok "packages.txt from the root's dpkg status: $(wc -l <"$t/deb-img/packages.txt") packages" ||
	not_ok "packages.txt lists the Debian root's packages"

# Reproducibility: built again from scratch (--rebuild), the same manifest digests.
digests() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(json.dumps({k: v for k, v in d.items() if k not in ("created", "expires")}, sort_keys=True))' "$1"; }
si "$t/deb-recipe" --out "$t/deb-img2" --sign-key "$t/test.key" --cache "$t/cache" --rebuild >"$t/out" 2>&1
rc=$?
if [[ $rc == 0 && $(digests "$t/deb-img/manifest.json") == "$(digests "$t/deb-img2/manifest.json")" ]] &&
	cmp -s "$t/deb-img/root.qcow2" "$t/deb-img2/root.qcow2"; then
	ok "built again (--rebuild): root.qcow2 byte-identical, the same manifest digests"
else
	not_ok "a rebuild of the same archive gives the same manifest digests (rc=$rc)"
	diag_file "$t/out"
fi
diag "root.qcow2 $(sha256sum <"$t/deb-img/root.qcow2" | cut -c1-16)"
rm -rf "$t/deb-img2"

# ---------------------------------------------------------------- 3. boot them
seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false
seatd_start
for img in bb-img deb-img; do
	"$CTL" -q image import "$t/$img/manifest.json" >"$t/out" 2>&1 && ok "seatctl image import $img" ||
		{ not_ok "seatctl image import $img"; diag_file "$t/out"; bail "image import failed"; }
done

boot() { # IMAGE: the seat's id in $S
	local s0
	s0=$(date +%s)
	S=$("$CTL" -q --json provision --image "$1" --participant alice 2>"$t/out" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])' 2>>"$t/out")
	if [[ $S =~ ^s[0-9a-f]{8}$ ]]; then
		ok "provision --image $1: seat $S READY in $(($(date +%s) - s0)) s (TCG)"
	else
		not_ok "provision --image $1 (got '$S')"
		diag_file "$t/out"
		bail "no seat"
	fi
}
x() { "$CTL" exec "$S" -- "$@"; }
# layers_in_guest WHAT: the whiteout, the opaque directory and the upper layers' files.
layers_in_guest() {
	out=$(x sh -c 'test -e /etc/gone && echo gone-present; test -e /etc/issue.net && echo issue-present
		cat /etc/oci-layer2; ls -A /etc/skel; /usr/local/bin/oci-layer3' 2>"$t/out")
	[[ $out == $'layer2\nlayer2-only\nlayer3' ]] &&
		ok "$1: the whiteout'd file is gone, /etc/skel (opaque) holds only layer 2's file, layers 2 and 3 are there" ||
		{ not_ok "$1: whiteouts and layers in the guest (got '$out')"; diag_file "$t/out"; }
}

boot oci-busybox
out=$(x sh -c 'cat /proc/1/comm; test -e /lib/systemd/systemd || echo no-systemd' 2>"$t/out")
[[ $out == $'init\nno-systemd' ]] && ok "busybox root: PID 1 is guest-init (/init of the initramfs), there is no systemd" ||
	{ not_ok "busybox root: PID 1 is guest-init (got '$out')"; diag_file "$t/out"; }
layers_in_guest "docker-save busybox root"
"$CTL" release "$S" >"$t/out" 2>&1 && ok "release $S" || { not_ok "release $S"; diag_file "$t/out"; }

boot oci-debian
out=$(x cat /proc/1/comm 2>"$t/out")
[[ $out == systemd ]] && ok "Debian root: PID 1 is systemd" || { not_ok "Debian root: PID 1 is systemd (got '$out')"; diag_file "$t/out"; }
out=$(x systemctl is-active seatd-agent.service 2>"$t/out")
[[ $out == active ]] && ok "the agent runs as seatd-agent.service" || { not_ok "seatd-agent.service active (got '$out')"; diag_file "$t/out"; }
layers_in_guest "OCI layout Debian root"
out=$(x sh -c 'test -e /etc/skel/.bashrc && echo lower-skel; grep -c SEAT_OCI_TEST=1 /etc/seatd/oci-image.json' 2>"$t/out")
[[ $out == 1 ]] && ok "the Debian root's own /etc/skel files are gone (opaque); the image config is in /etc/seatd/oci-image.json" ||
	{ not_ok "opaque /etc/skel and oci-image.json (got '$out')"; diag_file "$t/out"; }
"$CTL" release "$S" >"$t/out" 2>&1 && ok "release $S" || { not_ok "release $S"; diag_file "$t/out"; }
[[ -z $(seat_domains) ]] && ok "no domain left after release" || not_ok "no domain left after release: $(seat_domains)"
tap_end
