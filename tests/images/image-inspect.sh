#!/usr/bin/env bash
# image-inspect.sh: libguestfs inspection at import, against a private seatd with
# inspect_images = true: the real test image passes; a missing guest-init, a disk with no
# filesystem and a guest-init of another protocol version are refused, and a refused
# import leaves none of its blobs behind. Speaks TAP.
#   usage: image-inspect.sh BUILD_DIR
# Each case that reaches inspection launches one appliance (10-20 s under TCG here): four
# in all. The appliance is built once, into the private state_dir/guestfs-cache.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
need_built "$SIGN" "$MANIFEST" "$SEATD" "$CTL" "$GUEST_INIT"
need_cmd -h "apt-get install libguestfs-tools qemu-utils e2fsprogs minisign" guestfish qemu-img mke2fs minisign python3
need_kernel

harness_workdir /tmp/seatd-inspect-test

# KVM is unusable on the build machines (docs: ENVIRONMENT.md): accel = tcg makes seatd
# launch the appliance with force_tcg. Real KVM hosts may say SEATD_TEST_ACCEL=auto.
export SEATD_SOCKET=$t/ctl.sock
seatd_conf "accel=${SEATD_TEST_ACCEL:-tcg}" inspect_images=true max_image_bytes=268435456

"$SIGN" keygen -W -p "$t/trusted.pub" -s "$t/trusted.key" >/dev/null 2>&1
cp "$t/trusted.pub" "$t/keys/"

seatd_start

sign() { "$SIGN" sign -s "$t/trusted.key" -m "$1" >/dev/null 2>&1; }
import() { "$CTL" image import "$1" >"$t/out" 2>&1; }
launches() { grep -c "appliance up in" "$t/seatd.log"; }
blob_count() { find "$t/state/images/blobs" -type f ! -name '.import-*' | wc -l; }
no_temp_left() { [[ -z $(find "$t/state/images/blobs" -name '.import-*') ]]; }
# expect_refused DESCRIPTION MANIFEST PATTERN: import fails, says why, leaves no new blob.
expect_refused() {
  local before
  before=$(blob_count)
  if import "$2"; then not_ok "$1 (was accepted)"; return; fi
  if ! grep -qiE "$3" "$t/out"; then not_ok "$1 (message does not match /$3/)"; return; fi
  if [[ $(blob_count) != "$before" ]] || ! no_temp_left; then not_ok "$1 (blobs left behind)"; return; fi
  ok "$1"
  head -3 "$t/out" | sed 's/^/#   /'
}
# manifest DIR NAME [seat-manifest args...]: a signed manifest for the files in DIR.
manifest() {
  local dir=$1 name=$2; shift 2
  "$MANIFEST" --name "$name" --version 1 --out "$dir/manifest.json" --cmdline "console=ttyS0" "$@" >/dev/null &&
    sign "$dir/manifest.json"
}

# --- (a) the real test image: guest-init at /dev/sda:/sbin/guest-init, protocol 1 ---
start=$SECONDS
if test_image "$t/good" --sign-key "$t/trusted.key" --disk-size 64M >"$t/out" 2>&1; then
  ok "the test image recipe builds a signed bundle"
else
  not_ok "the test image recipe builds a signed bundle"; echo "1..$n"; exit 1
fi
grep -q '"guest_init":{"filesystem":"/dev/sda","path":"/sbin/guest-init"}' "$t/good/manifest.json" ||
  grep -q '/sbin/guest-init' "$t/good/manifest.json" || echo "# warning: the recipe's manifest names no guest_init"
t0=$SECONDS
if import "$t/good/manifest.json"; then ok "the real test image passes inspection and imports"; else not_ok "the real test image passes inspection and imports"; fi
[[ $(launches) == 1 ]] && ok "its import launched one appliance ($((SECONDS - t0)) s, first launch builds it)" ||
  not_ok "its import launched one appliance (launches: $(launches))"
grep "appliance up in" "$t/seatd.log" | sed 's/^/# /'
[[ -n $(find "$t/state/guestfs-cache" -mindepth 1 -maxdepth 1 2>/dev/null) ]] &&
  ok "the appliance is kept in state_dir/guestfs-cache" || not_ok "the appliance is kept in state_dir/guestfs-cache"

# --- (b) guest_init names a path that is not there (the same, already stored disk) ---
mkdir -p "$t/nope"
cp "$t/good/root.qcow2" "$t/good/vmlinux" "$t/good/initramfs.img" "$t/nope/"
manifest "$t/nope" nope --disk "$t/nope/root.qcow2" --kernel "$t/nope/vmlinux" --initrd "$t/nope/initramfs.img" \
  --guest-init /dev/sda:/sbin/nope
expect_refused "a guest_init path that is not on the disk is refused (the shared blob stays)" "$t/nope/manifest.json" \
  "image 'nope': guest-init '/sbin/nope' is not on '/dev/sda'"
"$CTL" image verify test-image >"$t/out" 2>&1 && ok "the image sharing that disk still verifies" || not_ok "the image sharing that disk still verifies"

# --- (c) a disk with no filesystem at all ---
mkdir -p "$t/blank"
qemu-img create -q -f qcow2 "$t/blank/disk.qcow2" 64M
head -c 300000 /dev/urandom >"$t/blank/kernel"
manifest "$t/blank" blank --disk "$t/blank/disk.qcow2" --kernel "$t/blank/kernel" --guest-init /dev/sda:/sbin/guest-init
expect_refused "a disk with no filesystem is refused and its blobs removed" "$t/blank/manifest.json" \
  "image 'blank': '/dev/sda' on disk 'disk.qcow2' holds no filesystem"

# --- (d) guest-init of another protocol version, on a raw ext4 disk made without an appliance ---
mkdir -p "$t/proto/root/sbin"
python3 - "$GUEST_INIT" "$t/proto/root/sbin/guest-init" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
assert b.count(b'SEATD_AGENT_PROTOCOL=1') == 1, 'guest-init carries no single protocol marker'
open(sys.argv[2], 'wb').write(b.replace(b'SEATD_AGENT_PROTOCOL=1', b'SEATD_AGENT_PROTOCOL=7'))
PY
chmod 0755 "$t/proto/root/sbin/guest-init"
mke2fs -q -F -t ext4 -d "$t/proto/root" "$t/proto/disk.raw" 16M >/dev/null
head -c 300000 /dev/urandom >"$t/proto/kernel"
manifest "$t/proto" proto --disk "$t/proto/disk.raw:raw" --kernel "$t/proto/kernel" --guest-init /dev/sda:/sbin/guest-init
expect_refused "a guest-init speaking another protocol version is refused" "$t/proto/manifest.json" \
  "speaks agent protocol 7, the manifest declares 1"

# --- no guest_init: guest-init lives in the initramfs, covered by its digest; no appliance ---
before=$(launches)
mkdir -p "$t/initrd"
cp "$t/blank/disk.qcow2" "$t/blank/kernel" "$t/initrd/"
manifest "$t/initrd" initrd --disk "$t/initrd/disk.qcow2" --kernel "$t/initrd/kernel"
if import "$t/initrd/manifest.json" && [[ $(launches) == "$before" ]]; then ok "an image without guest_init imports without an appliance"
else not_ok "an image without guest_init imports without an appliance"; fi

[[ $(launches) == 4 ]] && ok "four appliance launches in all" || not_ok "four appliance launches in all (saw $(launches))"
kill -0 "$seatd_pid" && ok "seatd is still serving" || not_ok "seatd is still serving"
echo "# whole test: $((SECONDS - start)) s"

tap_end
