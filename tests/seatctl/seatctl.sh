#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# seatctl's own conventions, in TAP, without seatd or VMs: --json and -q after the verb,
# exec's exit status 125 for seatctl's own failures, and that nothing after "--" is taken
# as seatctl's option. A missing socket stands for seatd not running; a private seatd
# (with no seats) for one that answers.
# usage: seatctl.sh /path/to/seatctl /path/to/seatd
set -u

CTL=${1:?usage: seatctl.sh SEATCTL SEATD}
SEATD=${2:-}
case $CTL in /*) ;; *) CTL=$PWD/$CTL ;; esac
case $SEATD in /*|'') ;; *) SEATD=$PWD/$SEATD ;; esac
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"

# run NAME ARGS...: seatctl's stdout, stderr and status in $t/NAME.{out,err,rc}; stdin is
# not a terminal, so exec would send it: /dev/null.
run() { local name=$1; shift; "$CTL" "$@" </dev/null >"$t/$name.out" 2>"$t/$name.err"; echo $? >"$t/$name.rc"; }
rc() { cat "$t/$1.rc"; }
# same A B: the same status and the same output, both streams
same() { [[ $(rc "$1") == $(rc "$2") ]] && cmp -s "$t/$1.out" "$t/$2.out" && cmp -s "$t/$1.err" "$t/$2.err"; }

harness_workdir /tmp/seatctl-test
unset SEATD_SOCKET SEATD_TOKEN
NONE=(--socket "$t/nonexistent.sock")

# ---- the global options after the verb, seatd not running
run json-before "${NONE[@]}" --json list
run json-after "${NONE[@]}" list --json
if [[ $(rc json-after) == 1 ]] && same json-before json-after && grep -q "seatd is not running" "$t/json-after.err"; then
        ok "list --json: accepted after the verb, the same error as --json list"
else
        not_ok "list --json: accepted after the verb (status $(rc json-after), before the verb $(rc json-before))"
        diag_file "$t/json-after.err"
fi
run q-before "${NONE[@]}" -q list
run q-after "${NONE[@]}" list -q
run quiet-after "${NONE[@]}" list --quiet
if [[ $(rc q-after) == 1 ]] && same q-before q-after && same q-before quiet-after; then
        ok "list -q / --quiet: accepted after the verb, the same error as -q list"
else
        not_ok "list -q / --quiet: accepted after the verb (status $(rc q-after) and $(rc quiet-after))"
        diag_file "$t/q-after.err"
fi
run img-before "${NONE[@]}" --json -q image list
run img-after "${NONE[@]}" image list -q --json
run status-after "${NONE[@]}" status s1 --json
run status-before "${NONE[@]}" --json status s1
if same img-before img-after && same status-before status-after && [[ $(rc img-after) == 1 ]]; then
        ok "image list -q --json and status SEAT --json: accepted after a sub-command and after an argument"
else
        not_ok "image list -q --json and status SEAT --json (status $(rc img-after), $(rc status-after))"
        diag_file "$t/img-after.err" "$t/status-after.err"
fi
run list-bad "${NONE[@]}" list --bogus
[[ $(rc list-bad) == 2 ]] && ok "list --bogus: still bad usage (2)" || not_ok "list --bogus: still bad usage (got $(rc list-bad))"
run list-dashdash "${NONE[@]}" list -- --json
[[ $(rc list-dashdash) == 2 ]] && ok "list -- --json: after '--' it is an argument, not the option (2)" \
        || not_ok "list -- --json: after '--' it is an argument (got $(rc list-dashdash))"

# ---- exec: 125 is seatctl's own failure
run exec-nosock "${NONE[@]}" exec s1 -- true
[[ $(rc exec-nosock) == 125 ]] && grep -q "seatd is not running" "$t/exec-nosock.err" \
        && ok "exec with seatd not running: 125 and the reason" || not_ok "exec with seatd not running: 125 (got $(rc exec-nosock))"
run exec-json-after "${NONE[@]}" exec s1 --json -- true
run exec-q-after "${NONE[@]}" exec s1 -q -- true
run exec-json-before "${NONE[@]}" exec --json s1 -- true
if [[ $(rc exec-json-after) == 125 ]] && same exec-json-before exec-json-after && same exec-nosock exec-q-after; then
        ok "exec SEAT --json / -q -- CMD: accepted between SEAT and '--'"
else
        not_ok "exec SEAT --json / -q -- CMD (got $(rc exec-json-after), $(rc exec-q-after))"
        diag_file "$t/exec-json-after.err"
fi
bad=
for args in "exec" "exec s1" "exec s1 --" "exec --bogus s1 -- true" "exec s1 --bogus -- true" "exec s1 --timeout" \
        "--bogus exec s1 -- true"; do
        # shellcheck disable=SC2086 # the words of args are meant to split
        run exec-usage "${NONE[@]}" $args
        [[ $(rc exec-usage) == 125 ]] || bad+=" '$args' gave $(rc exec-usage);"
done
run exec-token "${NONE[@]}" --token x exec s1 -- true
[[ $(rc exec-token) == 125 ]] || bad+=" '--token x exec' gave $(rc exec-token);"
[[ -z $bad ]] && ok "exec bad usage (before or after the verb, --token): 125" || not_ok "exec bad usage: 125 ($bad)"
# --user: numbers only, checked before anything is sent (seatd is not even asked).
bad=
for u in abc -1 " 5" 4294967295 1:x 1: :1 1:2:3 ""; do
        run exec-user "${NONE[@]}" exec --user "$u" s1 -- true
        [[ $(rc exec-user) == 125 ]] && grep -q "exec: --user takes UID or UID:GID" "$t/exec-user.err" || bad+=" '$u' gave $(rc exec-user);"
done
run exec-user-ok "${NONE[@]}" exec --user 65534:65534 s1 -- true
grep -q "seatd is not running" "$t/exec-user-ok.err" || bad+=" '65534:65534' was refused: $(head -c 200 "$t/exec-user-ok.err");"
[[ -z $bad ]] && ok "exec --user: a bad UID[:GID] is refused with 125 and what it takes" || not_ok "exec --user refuses bad values ($bad)"
run exec-help "${NONE[@]}" exec --help
[[ $(rc exec-help) == 0 ]] && grep -q "125" "$t/exec-help.out" && ok "exec --help: 0, and it documents 125" \
        || not_ok "exec --help: 0, and it documents 125 (got $(rc exec-help))"
run help "${NONE[@]}" --help
grep -q -- "--json and -q may also come after the command" "$t/help.out" && grep -q "125" "$t/help.out" \
        && ok "seatctl --help says where --json and -q go and what exec's 125 means" \
        || not_ok "seatctl --help says where --json and -q go and what exec's 125 means"

# ---- against a real seatd that answers (a private one, no seats: nothing here boots a VM;
# what a command's own status does to exec is tried on a real seat in lifecycle.sh)
if [[ ! -x $SEATD ]]; then
        for d in "list --json prints JSON" "exec: a seatd error is 125"; do skip "$d" "seatd is not built (no libvirt)"; done
        tap_end
fi
# (libvirt's test driver: nothing here boots, and the host's libvirtd is restarted by the
# VM lane's lifecycle suite while this one runs beside it: a seatd starting then failed)
seatd_conf inspect_images=false network=false libvirt_uri=test:///default
SEATD_LOG_LEVEL='' seatd_start
F=(--socket "$t/ctl.sock")
run fl-before "${F[@]}" --json list
run fl-after "${F[@]}" list --json
if [[ $(rc fl-after) == 0 ]] && same fl-before fl-after && python3 -c 'import json,sys; json.load(sys.stdin)["seats"]' <"$t/fl-after.out"; then
        ok "list --json prints the same JSON as --json list"
else
        not_ok "list --json prints the same JSON as --json list (status $(rc fl-after))"
        diag_file "$t/fl-after.out" "$t/fl-after.err" "$t/seatd.log"
fi
run fe-gone "${F[@]}" exec sdeadbeef -- true
run fe-gone-json "${F[@]}" exec sdeadbeef --json -- true
[[ $(rc fe-gone) == 125 && $(rc fe-gone-json) == 125 ]] && grep -q "sdeadbeef" "$t/fe-gone.err" \
        && ok "exec: seatd's refusal (no such seat) is 125, with seatd's message" \
        || { not_ok "exec: a seatd error is 125 (got $(rc fe-gone), $(rc fe-gone-json))"; diag_file "$t/fe-gone.err"; }

tap_end
