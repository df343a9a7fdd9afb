#!/usr/bin/env bash
# image-store.sh: the image supply chain end to end, against a private seatd, with
# seat-sign, seat-manifest, seatctl and the real minisign. Speaks TAP.
#   usage: image-store.sh BUILD_DIR
# Every case of "Image and supply chain" in SECURITY-TESTS.md that an import can reach.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
need_built "$SIGN" "$MANIFEST" "$SEATD" "$CTL"
command -v minisign >/dev/null || bail "minisign is not installed (apt-get install minisign)"
command -v qemu-img >/dev/null || bail "qemu-img is not installed"

harness_workdir /tmp/seatd-image-test

export SEATD_SOCKET=$t/ctl.sock
# (libvirt's test driver: nothing here boots, and the VM lane's lifecycle suite restarts
# the host's libvirtd while this suite runs beside it)
seatd_conf max_image_bytes=67108864 inspect_images=false libvirt_uri=test:///default

# A trusted key (ours, unprotected for automation) and an untrusted one.
"$SIGN" keygen -W -p "$t/trusted.pub" -s "$t/trusted.key" >/dev/null 2>&1
"$SIGN" keygen -W -p "$t/other.pub" -s "$t/other.key" >/dev/null 2>&1
cp "$t/trusted.pub" "$t/keys/"

# bundle DIR VERSION [seat-manifest args...]: a small image: a qcow2 disk and a raw kernel.
bundle() {
  local dir=$1 version=$2; shift 2
  mkdir -p "$dir"
  [[ -f $dir/disk.qcow2 ]] || { qemu-img create -q -f qcow2 "$dir/disk.qcow2" 16M; head -c 300000 /dev/urandom >"$dir/kernel"; }
  "$MANIFEST" --name "${NAME:-demo}" --version "$version" --out "$dir/manifest.json" \
    --disk "$dir/disk.qcow2" --kernel "$dir/kernel" --cmdline "console=ttyS0" --chunk-size 65536 "$@"
}
sign() { "$SIGN" sign -s "${2:-$t/trusted.key}" -m "$1" >/dev/null 2>&1; }
import() { "$CTL" image import "$1" >"$t/out" 2>&1; }
# expect_refused DESCRIPTION MANIFEST PATTERN: import fails and says why.
expect_refused() {
  if import "$2"; then not_ok "$1 (was accepted)"; return; fi
  if grep -qiE "$3" "$t/out"; then ok "$1"; else not_ok "$1 (message does not match /$3/)"; fi
}
blob_count() { find "$t/state/images/blobs" -type f ! -name '.import-*' | wc -l; }
no_temp_left() { [[ -z $(find "$t/state/images/blobs" -name '.import-*') ]]; }

seatd_start

# --- the good path, and interop with the real minisign ---
bundle "$t/v2" 2 && sign "$t/v2/manifest.json"
if minisign -Vq -p "$t/trusted.pub" -m "$t/v2/manifest.json"; then ok "minisign verifies seat-sign's manifest signature"; else not_ok "minisign verifies seat-sign's manifest signature"; fi
if import "$t/v2/manifest.json"; then ok "a signed image imports"; else not_ok "a signed image imports"; fi
"$CTL" image list >"$t/out" 2>&1 && grep -q "^demo .* 2 " "$t/out" && ok "image list shows it" || not_ok "image list shows it"
"$CTL" --json image list >"$t/out" 2>&1 && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["images"][0]["name"]=="demo" and d["images"][0]["version"]==2' "$t/out" \
  && ok "image list --json is JSON" || not_ok "image list --json is JSON"
"$CTL" image verify demo >"$t/out" 2>&1 && grep -q "verified" "$t/out" && ok "image verify re-hashes the stored copy" || not_ok "image verify re-hashes the stored copy"
[[ $(stat -c %a "$(find "$t/state/images/blobs" -type f | head -1)") == 444 ]] && ok "stored blobs are read-only" || not_ok "stored blobs are read-only"
if import "$t/v2/manifest.json"; then ok "re-importing the same version is idempotent"; else not_ok "re-importing the same version is idempotent"; fi

# --- swapped after verification: the caller's files no longer matter ---
head -c 300000 /dev/zero >"$t/v2/kernel"
rm -f "$t/v2/disk.qcow2"; ln -s /etc/passwd "$t/v2/disk.qcow2"
"$CTL" image verify demo >"$t/out" 2>&1 && ok "rewriting and symlinking the source after import does not touch the stored copy" \
  || not_ok "rewriting and symlinking the source after import does not touch the stored copy"
rm -f "$t/v2/disk.qcow2"

# --- tampering: one bit anywhere ---
mk() { rm -rf "$t/$1"; NAME=${NAME:-demo} bundle "$t/$1" "$2" >/dev/null; sign "$t/$1/manifest.json"; }
flip() { # flip one bit of file $1 at byte offset $2
  python3 - "$1" "$2" <<'PY'
import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, 'rb').read()); b[off] ^= 0x01; open(p, 'wb').write(bytes(b))
PY
}
before=$(blob_count)
mk flipdisk 3; flip "$t/flipdisk/kernel" 150000
expect_refused "a bit flipped in a file is refused" "$t/flipdisk/manifest.json" "chunk 2 of 'kernel'|does not match"
[[ $(blob_count) == "$before" ]] && no_temp_left && ok "a refused import leaves nothing in the store" || not_ok "a refused import leaves nothing in the store"

mk flipman 3; sed -i 's/"memory_mib":256/"memory_mib":257/' "$t/flipman/manifest.json"
expect_refused "an edited manifest field is refused" "$t/flipman/manifest.json" "signature"

mk flipsig 3; python3 - "$t/flipsig/manifest.json.minisig" <<'PY'
import base64, sys
p = sys.argv[1]; lines = open(p).read().split('\n')
raw = bytearray(base64.b64decode(lines[1])); raw[20] ^= 1
lines[1] = base64.b64encode(bytes(raw)).decode(); open(p, 'w').write('\n'.join(lines))
PY
expect_refused "a bit flipped in the signature is refused" "$t/flipsig/manifest.json" "signature"

mk fliptc 3; sed -i 's/^trusted comment: /trusted comment: x/' "$t/fliptc/manifest.json.minisig"
expect_refused "an edited trusted comment is refused" "$t/fliptc/manifest.json" "trusted comment|global"

mk algo 3; python3 - "$t/algo/manifest.json.minisig" <<'PY'
import base64, sys
p = sys.argv[1]; lines = open(p).read().split('\n')
raw = bytearray(base64.b64decode(lines[1])); raw[0:2] = b'XY'
lines[1] = base64.b64encode(bytes(raw)).decode(); open(p, 'w').write('\n'.join(lines))
PY
expect_refused "an unknown algorithm tag is refused" "$t/algo/manifest.json" "algorithm"

rm -rf "$t/untrusted"; bundle "$t/untrusted" 3 >/dev/null; sign "$t/untrusted/manifest.json" "$t/other.key"
expect_refused "a valid signature from an untrusted key is refused" "$t/untrusted/manifest.json" "not signed by any trusted key"

rm -rf "$t/unsigned"; bundle "$t/unsigned" 3 >/dev/null
expect_refused "an unsigned manifest is refused" "$t/unsigned/manifest.json" "signature"

# --- minisign's own signature of a manifest is accepted ---
mkdir -p "$t/mini"
if minisign -G -W -p "$t/mini.pub" -s "$t/mini.key" -f </dev/null >/dev/null 2>&1; then # (-W: no password, stdin unread: a printf piped in raced it, SIGPIPE under pipefail)
  cp "$t/mini.pub" "$t/keys/"
  NAME=mini bundle "$t/mini" 1 >/dev/null
  minisign -S -W -s "$t/mini.key" -m "$t/mini/manifest.json" >/dev/null 2>&1 </dev/null || minisign -S -s "$t/mini.key" -m "$t/mini/manifest.json" </dev/null >/dev/null 2>&1
  if import "$t/mini/manifest.json"; then ok "a manifest signed by minisign imports"; else not_ok "a manifest signed by minisign imports"; fi
else
  not_ok "minisign -G -W works"
fi

# --- rollback and expiry, and the high-water mark across restarts ---
mk v1 1
expect_refused "an older version than the one accepted is refused" "$t/v1/manifest.json" "older than version 2|no rollback"
mk v2b 2; sed -i 's/console=ttyS0/console=ttyS1/' "$t/v2b/manifest.json"; sign "$t/v2b/manifest.json"
expect_refused "the same version with other contents is refused" "$t/v2b/manifest.json" "already accepted with other contents"
seatd_stop; seatd_start
expect_refused "the high-water mark survives a restart of seatd" "$t/v1/manifest.json" "older than version 2"
"$CTL" image remove demo >"$t/out" 2>&1 && ok "image remove" || not_ok "image remove"
expect_refused "removing an image keeps its high-water mark" "$t/v1/manifest.json" "older than version 2"
rm -rf "$t/expired"; bundle "$t/expired" 5 --created 2020-01-01T00:00:00Z --expires 2021-01-01T00:00:00Z >/dev/null; sign "$t/expired/manifest.json"
expect_refused "an expired manifest is refused" "$t/expired/manifest.json" "expired"

# --- formats are pinned ---
rm -rf "$t/backing"; mkdir -p "$t/backing"; head -c 1048576 /dev/zero >"$t/base.raw"
qemu-img create -q -f qcow2 -b "$t/base.raw" -F raw "$t/backing/disk.qcow2" 1M; head -c 300000 /dev/urandom >"$t/backing/kernel"
bundle "$t/backing" 6 >/dev/null; sign "$t/backing/manifest.json"
expect_refused "a qcow2 with a backing file is refused" "$t/backing/manifest.json" "backing file"
rm -rf "$t/datafile"; mkdir -p "$t/datafile"; head -c 300000 /dev/urandom >"$t/datafile/kernel"
qemu-img create -q -f qcow2 -o data_file="$t/data.raw" "$t/datafile/disk.qcow2" 1M
bundle "$t/datafile" 6 >/dev/null; sign "$t/datafile/manifest.json"
expect_refused "a qcow2 with an external data file is refused" "$t/datafile/manifest.json" "external data file"
rm -rf "$t/confused"; mkdir -p "$t/confused"; qemu-img create -q -f qcow2 "$t/confused/disk.qcow2" 1M; head -c 300000 /dev/urandom >"$t/confused/kernel"
"$MANIFEST" --name demo --version 6 --out "$t/confused/manifest.json" --disk "$t/confused/disk.qcow2:raw" --kernel "$t/confused/kernel" --chunk-size 65536
sign "$t/confused/manifest.json"
expect_refused "a raw disk that starts with a qcow2 header is refused" "$t/confused/manifest.json" "starts with a qcow2 header"
# ... also when those very bytes are stored already (as another image's qcow2): they are
# not copied again, but still checked against what this manifest calls them.
rm -rf "$t/twice"; NAME=twice bundle "$t/twice" 1 >/dev/null; sign "$t/twice/manifest.json"
import "$t/twice/manifest.json" || not_ok "import of the image whose disk is then listed as raw: $(cat "$t/out")"
"$MANIFEST" --name twice2 --version 1 --out "$t/twice/raw.json" --disk "$t/twice/disk.qcow2:raw" --kernel "$t/twice/kernel" --chunk-size 65536
sign "$t/twice/raw.json"
expect_refused "a stored qcow2's bytes listed again as raw are refused" "$t/twice/raw.json" "starts with a qcow2 header"

# --- sizes ---
mk grown 7; head -c 1000 /dev/urandom >>"$t/grown/kernel"
expect_refused "a file larger than declared is refused" "$t/grown/manifest.json" "declares"
rm -rf "$t/huge"; mkdir -p "$t/huge"; qemu-img create -q -f qcow2 "$t/huge/disk.qcow2" 1M; truncate -s 70M "$t/huge/kernel"
bundle "$t/huge" 7 >/dev/null; sign "$t/huge/manifest.json"
expect_refused "a file over max_image_bytes is refused before it is read" "$t/huge/manifest.json" "max_image_bytes"

# --- a stored blob damaged behind seatd's back is found ---
mk v8 8; import "$t/v8/manifest.json"
ident=$("$CTL" --json image list | python3 -c 'import json,sys; d=json.load(sys.stdin); print([f["identity"] for i in d["images"] if i["name"]=="demo" for f in i["disks"] if f["file"]=="kernel"][0])')
blob=$t/state/images/blobs/$ident
chmod u+w "$blob"; flip "$blob" 1000
if "$CTL" image verify demo >"$t/out" 2>&1; then not_ok "a damaged stored blob fails image verify"; else
  grep -q "NOT VERIFIED" "$t/out" && ok "a damaged stored blob fails image verify" || not_ok "a damaged stored blob fails image verify"; fi

# --- chunks larger than what verify reads at once (1 MiB): hashed in pieces, and still
# exact: a byte damaged in the middle of a 4 MiB chunk is found ---
rm -rf "$t/big"; mkdir -p "$t/big"; qemu-img create -q -f qcow2 "$t/big/disk.qcow2" 1M; head -c 5000000 /dev/urandom >"$t/big/kernel"
NAME=big bundle "$t/big" 1 --chunk-size 4194304 >/dev/null; sign "$t/big/manifest.json"
import "$t/big/manifest.json" && "$CTL" image verify big >"$t/out" 2>&1 && grep -q "verified" "$t/out" \
  && ok "an image of 4 MiB chunks verifies (each hashed in 1 MiB pieces)" || not_ok "an image of 4 MiB chunks verifies: $(head -c 300 "$t/out")"
ident=$("$CTL" --json image list | python3 -c 'import json,sys; d=json.load(sys.stdin); print([f["identity"] for i in d["images"] if i["name"]=="big" for f in i["disks"] if f["file"]=="kernel"][0])')
blob=$t/state/images/blobs/$ident
chmod u+w "$blob"; flip "$blob" 2500000
if "$CTL" image verify big >"$t/out" 2>&1; then not_ok "a byte damaged mid-chunk fails image verify"; else
  grep -q "NOT VERIFIED" "$t/out" && ok "a byte damaged in the middle of a 4 MiB chunk fails image verify" || not_ok "a byte damaged mid-chunk fails image verify"; fi

# --- who may ask ---
# Through the sockets as seatd made them (tests/security/sockets.sh tries them in depth):
# the operator socket is closed to other users, the participant socket serves no image.*.
chmod 0755 "$t" # the test's own directory
if as_nobody "$CTL" image list >"$t/out" 2>&1; then
  not_ok "a non-operator is denied image.list"
else
  grep -q "no permission to talk to seatd" "$t/out" && ok "a non-operator cannot reach image.list on the operator socket" || not_ok "a non-operator is denied image.list"
fi
token_file "$t/tok" x
if as_nobody "$CTL" --token-file "$t/tok" image list >"$t/out" 2>&1; then
  not_ok "a token does not open image.list"
else
  grep -q "no permission to talk to seatd" "$t/out" && ok "a token does not open image.list (the operator socket stays closed)" || not_ok "a token does not open image.list"
fi

# --- bad input from the CLI ---
"$CTL" image import /nonexistent/manifest.json >"$t/out" 2>&1; [[ $? == 1 ]] && grep -q "manifest '/nonexistent" "$t/out" && ok "a missing manifest gets a clear error" || not_ok "a missing manifest gets a clear error"
"$CTL" image verify '../etc' >"$t/out" 2>&1; [[ $? == 1 ]] && grep -q "image name" "$t/out" && ok "a bad image name is refused" || not_ok "a bad image name is refused"
kill -0 "$seatd_pid" && ok "seatd is still serving" || not_ok "seatd is still serving"

tap_end
