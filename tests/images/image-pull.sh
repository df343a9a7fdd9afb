#!/usr/bin/env bash
# image-pull.sh: `seatctl image pull URL` end to end, against a private seatd and a
# misbehaving test HTTP(S) server (test-http-server.py) on 127.0.0.1 only. Speaks TAP.
#   usage: image-pull.sh BUILD_DIR
# A throwaway CA, a server certificate for 127.0.0.1/localhost and a second, wrong CA are
# made with openssl in the test's temp dir. Nothing leaves the machine.
set -uo pipefail

# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_build "${1:?usage: $0 BUILD_DIR}"
HTTPD=$(dirname "$(realpath "$0")")/test-http-server.py
need_built "$SIGN" "$MANIFEST" "$SEATD" "$CTL"
for c in python3 openssl qemu-img; do
  command -v "$c" >/dev/null || bail "$c is not installed (scripts/lib/host.sh lists the packages)"
done

# Loopback only, whatever proxy the caller's environment names.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

harness_workdir /tmp/seatd-pull-test
http_pid= https_pid= ctl_pid=
harness_on_exit 'kill_wait "$ctl_pid" "$http_pid" "$https_pid"'
# KEEP_LOG=FILE keeps seatd's log for a look afterwards.
[[ -n ${KEEP_LOG:-} ]] && harness_keep_log "$KEEP_LOG"
harness_not_ok_log=5

export SEATD_SOCKET=$t/ctl.sock
staging=$t/state/images/staging
mkdir -p "$t/keys" "$t/state" "$t/www"; : >"$t/http.log"; : >"$t/https.log"

# --- a throwaway CA, a server certificate signed by it, and a CA that signed nothing ---
tls() {
  local d=$t/tls; mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$d/ca.key" -out "$d/ca.pem" -subj "/CN=seatd test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$d/wrong-ca.key" -out "$d/wrong-ca.pem" -subj "/CN=seatd wrong CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" || return 1
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$d/server.key" -out "$d/server.csr" -subj "/CN=127.0.0.1" || return 1
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >"$d/ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 2 -extfile "$d/ext" -out "$d/server.pem"
}
tls >"$t/openssl.log" 2>&1 || { echo "Bail out! openssl could not make the test certificates"; cat "$t/openssl.log"; exit 1; }

# --- the bundles: a multi-chunk qcow2 disk and a raw kernel, 64 KiB chunks ---
"$SIGN" keygen -W -p "$t/trusted.pub" -s "$t/trusted.key" >/dev/null 2>&1
"$SIGN" keygen -W -p "$t/other.pub" -s "$t/other.key" >/dev/null 2>&1
cp "$t/trusted.pub" "$t/keys/"
b1=$t/www/b1
mkdir -p "$b1"
head -c 2097152 /dev/urandom >"$t/disk.raw"
qemu-img convert -q -f raw -O qcow2 "$t/disk.raw" "$b1/disk.qcow2"
head -c 1500000 /dev/urandom >"$b1/kernel"
"$MANIFEST" --name demo --version 1 --out "$b1/manifest.json" --disk "$b1/disk.qcow2" --kernel "$b1/kernel" \
  --cmdline console=ttyS0 --chunk-size 65536 >/dev/null
"$SIGN" sign -s "$t/trusted.key" -m "$b1/manifest.json" >/dev/null 2>&1
first=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["files"][0]["name"])' "$b1/manifest.json")
first_size=$(stat -c %s "$b1/$first")
# A manifest edited after signing; a good signature by a key seatd does not trust.
cp -r "$b1" "$t/www/tampered"; sed -i 's/console=ttyS0/console=ttyS1/' "$t/www/tampered/manifest.json"
cp -r "$b1" "$t/www/untrusted"; rm "$t/www/untrusted/manifest.json.minisig"
"$SIGN" sign -s "$t/other.key" -m "$t/www/untrusted/manifest.json" >/dev/null 2>&1

# --- the servers ---
start_httpd() { # start_httpd VAR PORTFILE LOG [args...]
  local var=$1 pf=$2 log=$3; shift 3
  python3 "$HTTPD" --root "$t/www" --port-file "$pf" --log "$log" --stall-seconds 30 "$@" 2>>"$t/httpd.err" &
  printf -v "$var" %s $!
  wait_until "[[ -s $pf ]] || ! kill -0 ${!var} 2>/dev/null" && [[ -s $pf ]] && return 0
  echo "Bail out! the test HTTP server did not start"; cat "$t/httpd.err"; exit 1
}
start_httpd http_pid "$t/http.port" "$t/http.log"
hp=$(cat "$t/http.port")
start_httpd https_pid "$t/https.port" "$t/https.log" --tls-cert "$t/tls/server.pem" --tls-key "$t/tls/server.key" \
  --redirect-base "http://127.0.0.1:$hp"
sp=$(cat "$t/https.port")
HTTP=http://127.0.0.1:$hp
HTTPS=https://127.0.0.1:$sp

# --- seatd, with a config per case group ---
# libvirt's in-memory test driver: this seatd must never touch the machine's domains.
pull_conf=(max_image_bytes=67108864 pull_low_speed_time=3 pull_connect_timeout=5 libvirt_uri=test:///default inspect_images=false)
seatd_conf -f "$t/strict.conf" "${pull_conf[@]}" "ca_file=$t/tls/ca.pem"
seatd_conf -f "$t/plain.conf" "${pull_conf[@]}" "ca_file=$t/tls/ca.pem" allow_plain_http=true
seatd_conf -f "$t/wrongca.conf" "${pull_conf[@]}" "ca_file=$t/tls/wrong-ca.pem"
start_seatd() { seatd_start "$t/$1.conf"; }

pull() { timeout 60 "$CTL" image pull "$1" >"$t/out" 2>&1; }
# expect_refused DESCRIPTION URL PATTERN: the pull fails and says why, naming the URL.
expect_refused() {
  if pull "$2"; then not_ok "$1 (was accepted)"; return; fi
  if grep -qiE "$3" "$t/out" && grep -qF "${2%/*}/" "$t/out"; then ok "$1"; else not_ok "$1 (message does not match /$3/ or does not name the URL)"; fi
}
parts() { find "$staging" -maxdepth 1 -name '*.part' 2>/dev/null | wc -l; }
part_size() { local f; f=$(find "$staging" -maxdepth 1 -name '*.part' -size +0 2>/dev/null | head -1); [[ -n $f ]] && stat -c %s "$f" || echo 0; }
clear_parts() { rm -f "$staging"/*.part; }
blob_count() { find "$t/state/images/blobs" -type f 2>/dev/null | wc -l; }
only_parts_left() { # nothing in staging but .part files, nothing half-made in the store
  [[ -z $(find "$staging" -mindepth 1 ! -name '*.part' 2>/dev/null) ]] && [[ -z $(find "$t/state/images/blobs" -name '.import-*') ]]
}
file_requests() { grep -cE "^GET /[a-z-]+/$1/(disk.qcow2|kernel)" "$t/http.log" "$t/https.log" | awk -F: '{s+=$2} END {print s+0}'; }
remove_demo() { "$CTL" image remove demo >/dev/null 2>&1; }

start_seatd strict

# --- the URL rules ---
expect_refused "plain HTTP is refused when seatd.conf does not allow it" "$HTTP/normal/b1/manifest.json" "allow_plain_http"
check "... before anything is requested" '[[ ! -s $t/http.log ]]'
expect_refused "file:// is refused" "file://$b1/manifest.json" "only https://"
expect_refused "ftp:// is refused" "ftp://127.0.0.1/b1/manifest.json" "only https://"
pull "https://user:secret@127.0.0.1:$sp/normal/nothere/manifest.json?token=secret2"
check "errors name the URL without its credentials or query" \
  'grep -qF "https://127.0.0.1:$sp/normal/nothere/manifest.json" "$t/out" && ! grep -q secret "$t/out" && grep -q "HTTP 404" "$t/out"'

expect_refused "an endless manifest is stopped at 1 MiB" "$HTTPS/endless-all/b1/manifest.json" "larger than 1048576 bytes"
check "... before any file is requested" '! grep -qE "^GET /endless-all/b1/(disk.qcow2|kernel)" "$t/https.log"'

# --- HTTPS with the configured CA ---
if timeout 60 "$CTL" --json image pull "$HTTPS/normal/b1/manifest.json" >"$t/out" 2>&1 &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["name"]=="demo" and d["version"]==1 and len(d["disks"])>=1' "$t/out"; then
  ok "an HTTPS pull with ca_file works (--json prints the image record)"
else not_ok "an HTTPS pull with ca_file works (--json prints the image record)"; fi
"$CTL" image verify demo >"$t/out" 2>&1 && grep -q verified "$t/out" && ok "the pulled image verifies in the store" || not_ok "the pulled image verifies in the store"
check "a successful pull leaves nothing in staging" '[[ -z $(find "$staging" -mindepth 1) ]]'
if command -v script >/dev/null; then
  remove_demo
  script -qec "$CTL image pull $HTTPS/normal/b1/manifest.json" /dev/null >"$t/out" 2>&1
  check "seatctl shows a progress bar for each download on a terminal" "grep -q \"download '$first'\" \"$t/out\" && grep -q '100%' \"$t/out\""
else
  ok "seatctl shows a progress bar on a terminal # SKIP script(1) is not installed"
fi

# --- signature before any file byte ---
expect_refused "a manifest edited after signing is refused" "$HTTPS/normal/tampered/manifest.json" "signature"
check "... before any of its files is requested" '[[ $(file_requests tampered) == 0 ]]'
expect_refused "a manifest signed by an untrusted key is refused" "$HTTPS/normal/untrusted/manifest.json" "not signed by any trusted key"
check "... before any of its files is requested" '[[ $(file_requests untrusted) == 0 ]]'

# --- redirects: never from https to http, even where http is allowed ---
seatd_stop; start_seatd plain
remove_demo
expect_refused "a redirect from https:// to http:// is refused" "$HTTPS/redirect/normal/b1/manifest.json" "redirect"

# --- the wrong CA ---
seatd_stop; start_seatd wrongca
remove_demo
expect_refused "HTTPS with a CA that did not sign the server's certificate is refused" "$HTTPS/normal/b1/manifest.json" "certificate"
check "... and nothing is staged" '[[ $(parts) == 0 ]]'

# --- plain HTTP where allowed, and servers that misbehave ---
seatd_stop; start_seatd plain
pull "$HTTP/normal/b1/manifest.json" && ok "plain HTTP works when allow_plain_http is set" || not_ok "plain HTTP works when allow_plain_http is set"
remove_demo

expect_refused "a file followed by more bytes than declared is stopped at the cap" "$HTTP/extra/b1/manifest.json" "sent more than the $first_size bytes"
check "... and nothing of it is kept" '[[ $(parts) == 0 ]] && [[ $(blob_count) == 0 ]] && only_parts_left'
expect_refused "a Content-Length larger than declared is refused before the body" "$HTTP/biglen/b1/manifest.json" "announced more than the $first_size bytes"
check "... and nothing of it is kept" '[[ $(parts) == 0 ]]'
start=$SECONDS
expect_refused "an endless stream is stopped at the cap" "$HTTP/endless/b1/manifest.json" "sent more than the $first_size bytes"
check "... at once and nothing is kept" '(( SECONDS - start < 10 )) && [[ $(parts) == 0 ]]'

# libcurl measures the speed as an average over about 5 s, so a stall shows after roughly
# pull_low_speed_time + 5 s; the server stays silent for 30 s.
start=$SECONDS
expect_refused "a stalled server is detected (pull_low_speed_time = 3)" "$HTTP/stall/b1/manifest.json" "stalled"
check "... within seconds, keeping the partial download for a resume" '(( SECONDS - start < 20 )) && [[ $(parts) == 1 ]] && only_parts_left'
clear_parts

expect_refused "a server that drops the connection halfway fails the pull" "$HTTP/drop/b1/manifest.json" "broke off"
# (150000 bytes came: the two whole chunks of 65536 are kept, the unfinished third is not)
check "... and leaves the partial download: its whole, verified chunks only" '[[ $(parts) == 1 ]] && [[ $(part_size) == 131072 ]]'
: >"$t/http.log"
pull "$HTTP/normal/b1/manifest.json" && ok "the next pull succeeds" || not_ok "the next pull succeeds"
rangeN=$(sed -n "s|^GET /normal/b1/$first Range: bytes=\([0-9]*\)-\$|\1|p" "$t/http.log" | head -1)
check "... resuming with a Range request from the last verified chunk (bytes=${rangeN:-none}-)" \
  '[[ -n $rangeN ]] && (( rangeN > 0 && rangeN % 65536 == 0 && rangeN <= 150000 ))'
"$CTL" image verify demo >"$t/out" 2>&1 && ok "... and the resumed image verifies" || not_ok "... and the resumed image verifies"
check "... and leaves nothing in staging" '[[ -z $(find "$staging" -mindepth 1) ]]'
remove_demo

pull "$HTTP/drop/b1/manifest.json"; : >"$t/http.log"
pull "$HTTP/ignore-range/b1/manifest.json" && grep -q "^GET /ignore-range/b1/$first Range: bytes=" "$t/http.log" \
  && ok "a server that ignores Range still works (the download starts over)" || not_ok "a server that ignores Range still works (the download starts over)"
"$CTL" image verify demo >/dev/null 2>&1 && ok "... and the image verifies" || not_ok "... and the image verifies"
remove_demo

expect_refused "a corrupted chunk is refused, naming the chunk" "$HTTP/corrupt/b1/manifest.json" "chunk 3 of '$first'"
check "... and nothing of it is kept" '[[ $(parts) == 0 ]] && [[ $(blob_count) == 0 ]] && only_parts_left'

# --- the client goes away mid-transfer (Ctrl-C) ---
clear_parts
# A background job of a non-interactive shell ignores SIGINT: restore it, as a terminal has it.
env --default-signal=INT "$CTL" image pull "$HTTP/slow/b1/manifest.json" >"$t/out" 2>&1 &
ctl_pid=$!
wait_until '(( $(part_size) > 65536 )) || ! kill -0 "$ctl_pid" 2>/dev/null'
kill -INT "$ctl_pid"; wait "$ctl_pid" 2>/dev/null; ctl_pid=
wait_until 'grep -q "pull of .*cancelled" "$t/seatd.log"'
check "killing seatctl mid-pull cancels the pull in seatd" 'grep -q "pull of .*cancelled" "$t/seatd.log"'
check "... seatd is still serving" '"$CTL" image list >"$t/out" 2>&1 && kill -0 "$seatd_pid"'
check "... and only the resumable .part is left" '[[ $(parts) == 1 ]] && only_parts_left'
pull "$HTTP/normal/b1/manifest.json" && ok "... which the next pull resumes" || not_ok "... which the next pull resumes"

tap_end
