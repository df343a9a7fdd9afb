#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# seat-sign against the real minisign, both ways, in TAP.
# usage: minisign-compat.sh /path/to/seat-sign
# Fails (does not skip) when minisign is missing: compatibility is a promise.
set -u

SEAT_SIGN=${1:?usage: minisign-compat.sh SEAT_SIGN}
case $SEAT_SIGN in /*) ;; *) SEAT_SIGN=$PWD/$SEAT_SIGN ;; esac
MINISIGN=${MINISIGN:-minisign}
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
# check DESCRIPTION CMD...: the command must succeed
check() { d=$1; shift; if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d"; echo "$out" | sed 's/^/# /'; fi; }
# refuse DESCRIPTION EXPECTED_RC PATTERN CMD...: must fail with that exit code and message
refuse() {
        d=$1 rc_want=$2 pat=$3; shift 3
        out=$("$@" 2>&1); rc=$?
        if [ "$rc" -eq "$rc_want" ] && printf '%s' "$out" | grep -q -- "$pat"; then
                ok "$d"
        else
                not_ok "$d (exit $rc, wanted $rc_want and '$pat')"
                echo "$out" | sed 's/^/# /'
        fi
}

if ! command -v "$MINISIGN" >/dev/null 2>&1; then
        echo "1..1"
        echo "not ok 1 - minisign is installed (apt-get install minisign): the compatibility test needs it"
        exit 1
fi
if [ ! -x "$SEAT_SIGN" ]; then
        echo "1..1"
        echo "not ok 1 - seat-sign '$SEAT_SIGN' is executable"
        exit 1
fi

dir=$(mktemp -d /tmp/seatd-minisign-compat.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
unset SEAT_SIGN_PASSWORD
PW=compat-password
printf '%s\n' "$PW" > pwfile
head -c 300000 /dev/urandom > data
printf 'tail line\n' >> data


# --- keys made by minisign ------------------------------------------------------------
check "minisign -G -W makes an unprotected key pair" "$MINISIGN" -G -W -p ms.pub -s ms.key
check "minisign -G makes a password-protected key pair (password on stdin)" \
        sh -c "printf '%s\n%s\n' '$PW' '$PW' | '$MINISIGN' -G -p mspw.pub -s mspw.key"

check "minisign signs (prehashed, default)" "$MINISIGN" -S -s ms.key -m data -x data.ms.minisig
check "seat-sign verifies minisign's prehashed signature (-p)" \
        "$SEAT_SIGN" verify -p ms.pub -m data -x data.ms.minisig
out=$("$SEAT_SIGN" verify -P "$(tail -n 1 ms.pub)" -m data -x data.ms.minisig -Q 2>&1)
if printf '%s' "$out" | grep -q "file:data	hashed"; then
        ok "seat-sign verify -P prints minisign's trusted comment"
else
        not_ok "seat-sign verify -P prints minisign's trusted comment"; echo "# $out"
fi

check "minisign signs legacy (-l)" "$MINISIGN" -S -l -s ms.key -m data -x data.legacy.minisig -t "legacy"
check "seat-sign verifies minisign's legacy signature" \
        "$SEAT_SIGN" verify -p ms.pub -m data -x data.legacy.minisig
refuse "seat-sign verify -H refuses the legacy signature" 1 "legacy 'Ed'" \
        "$SEAT_SIGN" verify -H -p ms.pub -m data -x data.legacy.minisig

check "minisign signs with its password-protected key" \
        sh -c "printf '%s\n' '$PW' | '$MINISIGN' -S -s mspw.key -m data -x data.mspw.minisig"
check "seat-sign verifies it" "$SEAT_SIGN" verify -p mspw.pub -m data -x data.mspw.minisig

check "seat-sign signs with minisign's unprotected key" \
        "$SEAT_SIGN" sign -s ms.key -m data -x data.ours-msk.minisig
check "minisign verifies that" "$MINISIGN" -V -p ms.pub -m data -x data.ours-msk.minisig
check "seat-sign signs with minisign's protected key (SEAT_SIGN_PASSWORD)" \
        env SEAT_SIGN_PASSWORD="$PW" "$SEAT_SIGN" sign -s mspw.key -m data -x data.ours-mspw.minisig
check "minisign verifies that" "$MINISIGN" -V -p mspw.pub -m data -x data.ours-mspw.minisig
refuse "seat-sign refuses a wrong password for minisign's key" 1 "wrong password" \
        env SEAT_SIGN_PASSWORD=wrong "$SEAT_SIGN" sign -s mspw.key -m data -x wrong.minisig

# --- keys made by seat-sign -------------------------------------------------------------
check "seat-sign keygen -W" "$SEAT_SIGN" keygen -W -p ours.pub -s ours.key
check "seat-sign keygen with --password-file" "$SEAT_SIGN" keygen -p ourspw.pub -s ourspw.key --password-file pwfile
refuse "seat-sign keygen refuses to overwrite without -f" 1 "already exists" \
        "$SEAT_SIGN" keygen -W -p ours.pub -s ours.key
check "seat-sign keygen -f overwrites" "$SEAT_SIGN" keygen -W -f -p ours.pub -s ours.key

check "seat-sign signs (default signature path)" "$SEAT_SIGN" sign -s ours.key -m data -t "image:test v:1"
check "minisign verifies seat-sign's signature" "$MINISIGN" -V -p ours.pub -m data
check "seat-sign signs with its protected key" \
        "$SEAT_SIGN" sign -s ourspw.key -m data -x data.ourspw.minisig --password-file pwfile
check "minisign verifies that" "$MINISIGN" -V -p ourspw.pub -m data -x data.ourspw.minisig
check "minisign signs with seat-sign's protected key (reads our scrypt format)" \
        sh -c "printf '%s\n' '$PW' | '$MINISIGN' -S -s ourspw.key -m data -x data.ms-ourspw.minisig"
check "seat-sign verifies that" "$SEAT_SIGN" verify -p ourspw.pub -m data -x data.ms-ourspw.minisig

# --- tampering: both tools refuse --------------------------------------------------------
cp data data.bad && printf 'x' >> data.bad
refuse "seat-sign refuses a changed file" 1 "file does not match its signature" \
        "$SEAT_SIGN" verify -p ms.pub -m data.bad -x data.ms.minisig
refuse "minisign refuses a changed file too" 1 "" "$MINISIGN" -V -p ms.pub -m data.bad -x data.ms.minisig

sed '3s/hashed/hashes/' data.ms.minisig > tc.minisig
refuse "seat-sign refuses a changed trusted comment" 1 "trusted comment does not match its global signature" \
        "$SEAT_SIGN" verify -p ms.pub -m data -x tc.minisig
refuse "minisign refuses a changed trusted comment too" 1 "" "$MINISIGN" -V -p ms.pub -m data -x tc.minisig

# Signature line: swap in the signature bytes of another file, keep tag and key id.
printf 'other' > other
"$MINISIGN" -S -s ms.key -m other -x other.minisig >/dev/null 2>&1
{ sed -n 1p data.ms.minisig; sed -n 2p other.minisig; sed -n 3,4p data.ms.minisig; } > sig.minisig
refuse "seat-sign refuses an altered signature line" 1 "signature does not verify" \
        "$SEAT_SIGN" verify -p ms.pub -m data -x sig.minisig
refuse "minisign refuses the altered signature line too" 1 "" "$MINISIGN" -V -p ms.pub -m data -x sig.minisig
# Global signature: one from another signature of the same key.
{ sed -n 1,3p data.ms.minisig; sed -n 4p other.minisig; } > global.minisig
refuse "seat-sign refuses an altered global signature" 1 "trusted comment does not match its global signature" \
        "$SEAT_SIGN" verify -p ms.pub -m data -x global.minisig
refuse "minisign refuses the altered global signature too" 1 "" "$MINISIGN" -V -p ms.pub -m data -x global.minisig
refuse "seat-sign refuses another key's signature (key id)" 1 "signature was made by key" \
        "$SEAT_SIGN" verify -p ours.pub -m data -x data.ms.minisig
refuse "seat-sign exits 2 on a usage error" 2 "exactly one of -p" \
        "$SEAT_SIGN" verify -m data

refuse "minisign refuses another key's signature too" 1 "" "$MINISIGN" -V -p ours.pub -m data -x data.ms.minisig

echo "1..$n"
[ "$failed" -eq 0 ]
