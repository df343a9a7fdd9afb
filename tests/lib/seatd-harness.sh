# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The one harness of seatd's shell suites and benches (systemd's test/units/util.sh is the
# model): sourced, never run. It gives
#   - TAP: ok, not_ok, check, check_cmd, skip, skip_all, bail, diag, diag_file, tap_end,
#     pass_fail_tap, tap_relay; wait_until, the bounded wait on an event;
#   - need_* checks that skip the whole suite with the reason when the host cannot run it;
#   - a work directory (harness_workdir) and ONE cleanup on EXIT, INT and TERM that stops
#     the private seatd, runs the suite's own harness_on_exit steps, removes the domains,
#     networks, nftables chains and routing rules of that seatd (leftovers.sh) and then the
#     work directory: suites and benches leave nothing behind, even when they fail;
#   - a private seatd: seatd_conf KEY=VALUE..., seatd_start, seatd_stop, seatd_kill;
#   - json_field, our_domains, seat_domains, token_file, as_nobody, as_daemon, provision_id;
#   - test_image: the signed test image, from the one meson builds (SEATD_TEST_IMAGE_DIR)
#     where it can, built by images/recipes/test-image where the suite asks for more;
#     test_key, image_build sign it (or an image made from it) with a key seatd trusts,
#     image_import imports it;
#   - seat-image: seat_image_setup (SI, CACHE), si builds a recipe, recipe_build_signed,
#     recipe_refused;
#   - bench helpers: bench_seatd, bench_provisions, bench_naive, ms, median, median_int,
#     wait_agent, image_blob, naive_domain_xml, naive_cycle.
# A suite:
#   . "$(dirname "$0")/../lib/seatd-harness.sh"
#   harness_build "${1:?usage: $0 BUILD_DIR}"
#   harness_vm_suite NAME [more programs it needs built]; need_libvirt
#   seatd_conf inspect_images=false; seatd_start
#   ... ok / not_ok ...
#   tap_end

HARNESS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RECIPE=$HARNESS_SRC/images/recipes/test-image
VIRSH=(virsh -q -c qemu:///system)
# shellcheck source=leftovers.sh
. "$HARNESS_SRC/tests/lib/leftovers.sh"

harness_prog=${0##*/}
harness_tap=1      # 0 in a bench: no TAP, a missing need is an error on stderr
harness_hooks=()   # harness_on_exit steps, run in order at exit
harness_bail_hooks=() # harness_on_bail steps, run before a bail out exits
harness_late_hooks=() # harness_on_exit --late steps, run once seatd and its leftovers are gone
harness_keep_log=  # where seatd's log is copied at exit
harness_seatd_must_live=0 # 1: a not_ok after seatd died bails out
harness_not_ok_log=0      # lines of seatd's log shown after each not_ok
t='' seatd_pid=''
n=0 failed=0

# ---------------------------------------------------------------- TAP
ok() { n=$((n + 1)); echo "ok $n - $*"; }
# not_ok DESCRIPTION: and what the failed step left in $t/out, and seatd's log tail if asked.
not_ok() {
        n=$((n + 1)) failed=$((failed + 1))
        # (and on stderr: meson parses a TAP test's stdout and shows only its stderr in the
        # error logs, so a failure in CI would otherwise come with no reason)
        {
                echo "not ok $n - $*"
                [[ -n $t && -s $t/out ]] && sed 's/^/# /' "$t/out" | head -20
                ((harness_not_ok_log > 0)) && [[ -f $t/seatd.log ]] && tail -n "$harness_not_ok_log" "$t/seatd.log" | sed 's/^/# seatd: /'
        } | tee /dev/stderr
        if ((harness_seatd_must_live)) && [[ -n $seatd_pid ]] && ! kill -0 "$seatd_pid" 2>/dev/null; then
                bail "seatd (pid $seatd_pid) is gone"
        fi
        return 0
}
# check DESCRIPTION EXPRESSION: ok when the expression (eval'd) holds.
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }
# wait_until [-t SECONDS] EXPRESSION: until the expression (eval'd, as check's) holds,
# tried every 0.1 s for at most SECONDS (default 120: a bound that only catches a hang;
# sanitizer builds and a loaded host make everything 2-15x slower); fails when it never
# did. A test waits on the event it checks with this, never with a fixed sleep. (The
# expression sees the caller's variables, not its positional parameters: $1 there is
# wait_until's own.)
wait_until() {
        local _wu_limit=120 _wu_end
        [[ ${1-} == -t ]] && { _wu_limit=$2; shift 2; }
        _wu_end=$((SECONDS + _wu_limit))
        until eval "$1"; do
                ((SECONDS < _wu_end)) || return 1
                sleep 0.1
        done
}
# check_cmd DESCRIPTION COMMAND...: ok when the command succeeds (its output in $t/out).
check_cmd() { local d=$1; shift; if "$@" >"$t/out" 2>&1; then ok "$d"; else not_ok "$d"; fi; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
diag() { echo "# $*"; }
diag_file() { sed 's/^/# /' "$@"; }
# pass_fail_tap: a Python driver's "PASS what" / "FAIL what" lines on stdin as ok / not_ok,
# any other line as a diag. Feed it with `pass_fail_tap < <(COMMAND)`: behind a pipe it
# would run in a subshell and its counts would be lost.
pass_fail_tap() {
        local line
        while IFS= read -r line; do
                case $line in
                PASS\ *) ok "${line#PASS }" ;;
                FAIL\ *) not_ok "${line#FAIL }" ;;
                *) diag "$line" ;;
                esac
        done
}
# tap_relay FILE PREFIX NAME: the TAP lines a node driver (mcp's client.mjs, web's
# browser.mjs) wrote to FILE as ours: "ok - X" and "not ok - X" with PREFIX before X
# (unless X begins with it already), "#" lines as they are, anything else dropped. A
# relayed not_ok shows no $t/out: the driver's own comments say why. A driver that wrote
# no result at all gets one not_ok "NAME ran", with its stderr (FILE.err).
tap_relay() {
        local file=$1 prefix=$2 name=$3 line d
        while IFS= read -r line; do
                case $line in
                "ok - "* | "not ok - "*)
                        d=${line#*ok - }
                        [[ $d == "$prefix"* ]] || d=$prefix$d
                        if [[ $line == "ok - "* ]]; then ok "$d"; else : >"$t/out"; not_ok "$d"; fi
                        ;;
                "#"*) echo "$line" ;;
                esac
        done <"$file"
        grep -q "^ok - \|^not ok - " "$file" || { cp "$file.err" "$t/out"; not_ok "$name ran"; }
}
# skip_all REASON: the whole suite cannot run here (in a bench: an error).
skip_all() {
        if ((harness_tap)); then echo "1..0 # SKIP $*"; exit 0; fi
        echo "$harness_prog: cannot run: $*" >&2
        exit 1
}
bail() {
        local h
        if ((harness_tap)); then echo "Bail out! $*"; else echo "$harness_prog: $*" >&2; fi
        for h in "${harness_bail_hooks[@]}"; do eval "$h"; done
        [[ -n $t && -f $t/seatd.log ]] && tail -30 "$t/seatd.log" | sed 's/^/# /' >&2
        exit 1
}
tap_end() { echo "1..$n"; exit $((failed > 0)); }

# harness_bench: this script is a bench (prints figures, no TAP).
harness_bench() { harness_tap=0; }

# ---------------------------------------------------------------- what the host needs
need_built() { local b; for b; do [[ -x $b ]] || skip_all "$b not built"; done; }
need_root() { [[ $(id -u) == 0 ]] || skip_all "needs root (libvirt qemu:///system)"; }
# need_cmd [-h HINT] CMD...: each command is on PATH; HINT says which packages give them.
need_cmd() {
        local hint='' c
        [[ ${1-} == -h ]] && { hint=" ($2)"; shift 2; }
        for c; do command -v "$c" >/dev/null || skip_all "$c is not installed$hint"; done
}
# need_libvirt [--start]: libvirtd answers on qemu:///system; with --start, started when it
# does not (host_start_libvirt), and a libvirtd that then does not answer is a bail out.
need_libvirt() {
        if [[ ${1-} == --start ]]; then
                libvirt_start || bail "libvirtd does not answer on qemu:///system"
                return 0
        fi
        "${VIRSH[@]}" version >/dev/null 2>&1 ||
                skip_all "libvirtd does not answer on qemu:///system (start it: . scripts/lib/host.sh; host_start_libvirt)"
}
# libvirt_start: virtlogd and libvirtd, started when libvirtd does not answer (also after a
# suite restarted it); fails when it does not answer then.
libvirt_start() {
        # shellcheck source=../../scripts/lib/host.sh
        declare -F host_start_libvirt >/dev/null || . "$HARNESS_SRC/scripts/lib/host.sh"
        (host_start_libvirt) >/dev/null 2>&1
}
need_kernel() {
        compgen -G '/boot/vmlinuz-*' >/dev/null ||
                skip_all "no kernel in /boot for the test image (apt-get install linux-image-amd64)"
}

# need_npm_client DIR PACKAGE INSTALLER: a node test client in DIR (its pinned PACKAGE,
# installed by scripts/lib/host.sh's INSTALLER) and node to run it.
need_npm_client() {
        need_cmd -h "apt-get install nodejs npm" node
        [[ -f $1/node_modules/$2/package.json ]] || skip_all "$2 is not installed (. scripts/lib/host.sh; $3)"
}
# harness_build BUILD_DIR: the programs of that build tree (for the suite to use).
# shellcheck disable=SC2034
harness_build() {
        build=$(realpath "$1") || bail "no build directory '$1'"
        SEATD=$build/seatd/seatd CTL=$build/seatctl/seatctl SIGN=$build/signing/seat-sign
        EV=$build/evidence/seat-evidence
        MANIFEST=$build/images/seat-manifest GUEST_INIT=${GUEST_INIT:-$build/guest-init/guest-init}
}

# ---------------------------------------------------------------- work directory, cleanup
# harness_workdir PREFIX [MODE]: t=PREFIX.XXXXXX, removed at exit with all it holds. MODE
# 0755 where QEMU (libvirt-qemu) or another user must reach into it.
harness_workdir() {
        t=$(mktemp -d "$1.XXXXXX") || bail "cannot make a work directory $1.XXXXXX"
        [[ -n ${2-} ]] && chmod "$2" "$t"
        harness_main_pid=$BASHPID
        trap harness_cleanup EXIT
        trap 'exit 130' INT TERM
}
# harness_vm_suite NAME [PROGRAM...]: a suite that boots seats: seatd, seatctl, seat-sign,
# seat-manifest, guest-init and these programs built, root; its work directory
# /var/tmp/seatd-NAME.XXXXXX (0755: QEMU, as another user, reaches the overlays in it) and
# seatd's log kept as meson-logs/NAME-seatd.log.
harness_vm_suite() {
        local name=$1
        shift
        need_built "$SIGN" "$SEATD" "$CTL" "$GUEST_INIT" "$MANIFEST" "$@"
        need_root
        harness_workdir "/var/tmp/seatd-$name" 0755
        harness_keep_log "$build/meson-logs/$name-seatd.log"
}
# harness_on_exit [--late] 'COMMAND': run (eval'd, so variables expand at exit) before the
# private seatd stops and its leftovers are removed; --late: after that (for what its seats
# used: an uplink, routes), before the work directory goes.
harness_on_exit() {
        if [[ $1 == --late ]]; then harness_late_hooks+=("$2"); else harness_hooks+=("$1"); fi
}
# harness_on_bail 'COMMAND': run (eval'd) when the suite bails out, after the Bail out! line
# (to say what it knows of the cause).
harness_on_bail() { harness_bail_hooks+=("$1"); }
# harness_keep_log FILE: copy seatd's log there at exit.
harness_keep_log() { harness_keep_log=$1; }
# kill_wait PID...: stop these children of ours (empty arguments are skipped).
kill_wait() { local p; for p; do [[ -n $p ]] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done; return 0; }

harness_cleanup() {
        local rc=$? h
        # Only the script itself cleans up. A background job (cmd &) killed with SIGTERM
        # just after its fork still has these traps (bash resets them in the child a little
        # later): it ran this, killing seatd and removing $t under the running script (CI's
        # evidence-vm, after its throttler was killed). tests/lib/test-harness-trap.sh.
        [[ $BASHPID == "${harness_main_pid:-$BASHPID}" ]] || exit "$rc"
        set +e
        trap - INT TERM
        for h in "${harness_hooks[@]}"; do eval "$h"; done
        seatd_stop
        if [[ -n $t && -d $t ]]; then
                [[ -n $harness_keep_log && -f $t/seatd.log ]] && cp "$t/seatd.log" "$harness_keep_log" 2>/dev/null
                seat_leftovers_remove "$t/state"
        fi
        for h in "${harness_late_hooks[@]}"; do eval "$h"; done
        [[ -n $t && -d $t ]] && rm -rf "$t"
        ((harness_seatd_crashed && rc == 0)) && rc=1 # (seatd_exit_check said why)
        exit "$rc"
}

# ---------------------------------------------------------------- the private seatd
# seatd_conf [-f FILE] KEY=VALUE...: write a seatd.conf (default $t/seatd.conf) with its
# state, sockets and trusted keys in $t, then each KEY = VALUE in order (a KEY of the
# first three replaces it).
seatd_conf() {
        local f=$t/seatd.conf kv k
        [[ ${1-} == -f ]] && { f=$2; shift 2; }
        local -A base=([state_dir]=$t/state [socket_path]=$t/ctl.sock [trusted_keys_dir]=$t/keys)
        for kv; do k=${kv%%=*}; [[ -n ${base[$k]+x} ]] && base[$k]=${kv#*=}; done
        mkdir -p "${base[state_dir]}" "${base[trusted_keys_dir]}"
        {
                for k in state_dir socket_path trusted_keys_dir; do echo "$k = ${base[$k]}"; done
                for kv; do
                        k=${kv%%=*}
                        [[ -n ${base[$k]+x} ]] || echo "$k = ${kv#*=}"
                done
        } >"$f"
}
# seatd_start [CONF]: start seatd (log level SEATD_LOG_LEVEL, default debug, empty: seatd's
# own default; the log in $t/seatd.log), wait up to 90 s until its operator socket answers
# (a restarted seatd says hello to each seat it adopts before it listens), and point
# seatctl at it (SEATD_SOCKET).
seatd_start() {
        local conf=${1:-$t/seatd.conf} sock
        sock=$(sed -n 's/^socket_path *= *//p' "$conf" | tail -n1)
        [[ -n $sock ]] || bail "no socket_path in $conf"
        local -a level=(-l "${SEATD_LOG_LEVEL-debug}")
        [[ -n ${SEATD_LOG_LEVEL-debug} ]] || level=()
        rm -f "$sock"
        "$SEATD" -c "$conf" "${level[@]}" >>"$t/seatd.log" 2>&1 &
        seatd_pid=$!
        for _ in $(seq 1 900); do
                kill -0 "$seatd_pid" 2>/dev/null || { seatd_pid=; bail "seatd exited at start"; }
                if [[ -S $sock ]] && "$CTL" --socket "$sock" list >/dev/null 2>&1; then
                        export SEATD_SOCKET=$sock
                        return 0
                fi
                sleep 0.1
        done
        bail "seatd did not start within 90 s"
}
# seatd_stop: SIGTERM, and SIGKILL if it is still there after a minute.
seatd_stop() {
        [[ -n $seatd_pid ]] || return 0
        kill "$seatd_pid" 2>/dev/null || true
        for _ in $(seq 1 600); do kill -0 "$seatd_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$seatd_pid" 2>/dev/null || true
        local st=0
        wait "$seatd_pid" 2>/dev/null || st=$?
        seatd_exit_check "$st"
        seatd_pid=
        return 0
}
# seatd_exit_check STATUS: a seatd that died of SIGABRT, SIGSEGV, SIGBUS, SIGILL or SIGFPE
# (an assert, a sanitizer's report, a crash; not the TERM or KILL it was sent) fails the
# suite at its exit, with the report from its log. Its TAP lines may all be ok: the crash
# often comes at the stop (a use-after-free at exit went unseen this way).
harness_seatd_crashed=0
seatd_exit_check() {
        case $1 in
        132 | 134 | 135 | 136 | 139)
                harness_seatd_crashed=1
                echo "# seatd (pid $seatd_pid) died of signal $(($1 - 128)); from its log:" >&2
                [[ -f $t/seatd.log ]] && grep -E -A12 'ERROR: AddressSanitizer|runtime error|Assertion|SUMMARY:' "$t/seatd.log" | head -40 | sed 's/^/# /' >&2
                ;;
        esac
        return 0
}
# seatd_kill: SIGKILL, as a crash would (its seats keep running, for the next seatd to adopt).
seatd_kill() {
        [[ -n $seatd_pid ]] || return 0
        kill -9 "$seatd_pid" 2>/dev/null
        wait "$seatd_pid" 2>/dev/null
        seatd_pid=
        return 0
}
# json_field EXPRESSION: a python expression of d, the JSON document on stdin.
json_field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
# seatd_seat_ids: the ids of every seat the private seatd knows.
seatd_seat_ids() {
        "$CTL" --json list 2>/dev/null |
                python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)["seats"]]' 2>/dev/null
}

# our_domains [STATE_DIR]: the libvirt domains (running or not) of the private seatd.
# (A libvirtd that was just restarted may not list yet: asked up to five times.)
our_domains() {
        local state=${1:-$t/state} d names=
        for _ in 1 2 3 4 5; do names=$("${VIRSH[@]}" list --all --name 2>/dev/null) && break; sleep 1; done
        for d in $names; do
                [[ $d == seatd-* ]] || continue
                [[ $("${VIRSH[@]}" dumpxml "$d" 2>/dev/null) == *"file='$state/"* ]] && echo "$d"
        done
        return 0
}
# seat_domains: those of its seats (disks in state/seats/), not the machines it saves warm
# states with.
seat_domains() { our_domains "$t/state/seats"; }
# token_file FILE TOKEN [OWNER [MODE]]: a token in a file of its own (mode 0644 by default).
token_file() {
        printf '%s\n' "$2" >"$1"
        [[ -n ${3-} ]] && chown "$3" "$1"
        chmod "${4:-0644}" "$1"
}
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }
as_daemon() { setpriv --reuid=daemon --regid=daemon --clear-groups -- "$@"; }

# ---------------------------------------------------------------- the test image
# test_image OUT [test-image options...]: the test image in OUT (signed with --sign-key
# KEY when asked). The recipe is reproducible, so meson's image (SEATD_TEST_IMAGE_DIR, set
# by `meson test` and scripts/bench) is the very image it would build: only signed
# (--prebuilt). Options that change the files (--disk-size, --guest-tool, --guest-init
# PATH for another agent, ...) build anew.
test_image() {
        local out=$1 a prebuilt=${SEATD_TEST_IMAGE_DIR-}
        local -a init=(--guest-init "$GUEST_INIT")
        shift
        for a; do
                case $a in
                --guest-init) prebuilt='' init=() ;;
                --disk-size | --guest-tool | --extra-module | --busybox | --kernel-version | \
                        --initramfs-compression | --kernel-format) prebuilt= ;;
                esac
        done
        local -a tools=()
        [[ -n ${build-} ]] && tools=(--tools "$build/images:$build/signing")
        if [[ -n $prebuilt && -f $prebuilt/image.json ]]; then
                "$RECIPE" --prebuilt "$prebuilt" --out "$out" --quiet "${tools[@]}" "$@"
        else
                "$RECIPE" "${init[@]}" --out "$out" --quiet "${tools[@]}" "$@"
        fi
}

# test_key: $t/test.key, a signing key of the suite's own that the private seatd trusts
# ($t/keys/test.pub), made once.
test_key() {
        [[ -f $t/test.key ]] && return 0
        mkdir -p "$t/keys"
        "$SIGN" keygen -W -p "$t/keys/test.pub" -s "$t/test.key" >/dev/null 2>&1 || bail "seat-sign keygen failed"
}
# image_build [DIR [test-image options...]]: the test image in DIR (default $t/img), signed
# with test_key (options such as --name, --guest-init AGENT make other images of it).
image_build() {
        local out=${1:-$t/img}
        (($#)) && shift
        test_key
        test_image "$out" --sign-key "$t/test.key" "$@" >"$t/out" 2>&1 || { cat "$t/out" >&2; bail "building the test image $out failed"; }
}
# image_import [test-image options...]: the test image in $t/img (built unless image_build
# made it already) imported into the running seatd.
image_import() {
        [[ -f $t/img/manifest.json ]] || image_build "$t/img" "$@"
        "$CTL" -q image import "$t/img/manifest.json" >"$t/out" 2>&1 || { cat "$t/out" >&2; bail "image import failed"; }
}
# guestfs_cache_shared: state_dir/guestfs-cache (where seatd keeps the libguestfs appliance
# its seals and inspections boot) is one directory kept for every suite and run on this
# host, /var/tmp/seatd-test-guestfs-cache: the appliance is built once (supermin copies
# the host's files and modules: 15 s to over a minute on these machines), not once per
# suite. Made before seatd starts, as a host's operator could; supermin rebuilds it when
# the host's kernel or packages change. Suites that test the appliance's own directory
# (image-inspect) do not call this.
GUESTFS_CACHE_SHARED=/var/tmp/seatd-test-guestfs-cache
guestfs_cache_shared() {
        mkdir -p "$GUESTFS_CACHE_SHARED" "$t/state" || bail "cannot make $GUESTFS_CACHE_SHARED"
        [[ -L $t/state/guestfs-cache ]] && return 0
        # -T: an existing directory there is an error, not a place to put the link into
        ln -sT "$GUESTFS_CACHE_SHARED" "$t/state/guestfs-cache" ||
                bail "cannot link $t/state/guestfs-cache to $GUESTFS_CACHE_SHARED"
}
# seatd_start_sealing [KEY=VALUE...]: a private seatd on TCG (no seat networks, no warm
# reset) that seals sessions to a facilitator key of the suite's own ($t/facilitator.key),
# started, with the test image imported.
seatd_start_sealing() {
        "$SIGN" keygen --box -p "$t/facilitator.pub" -s "$t/facilitator.key" >/dev/null 2>&1 || bail "seat-sign keygen --box failed"
        seatd_conf accel=tcg allow_tcg=true inspect_images=false network=false warm_reset=false \
                "facilitator_key=$t/facilitator.pub" "$@"
        guestfs_cache_shared
        seatd_start
        image_import
}
# provision_id [seatctl provision options...]: provision a seat of the test image, print its id.
provision_id() {
        "$CTL" -q --json provision --image test-image "$@" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seats"][0]["id"])'
}

# ---------------------------------------------------------------- seat-image
# seat_image_setup: SI, images/seat-image, and CACHE, where it keeps its Debian roots and
# built images (SEAT_IMAGE_CACHE, default /var/cache/seatd-images like scripts/fresh-root's).
# shellcheck disable=SC2034
seat_image_setup() {
        SI=$HARNESS_SRC/images/seat-image
        CACHE=${SEAT_IMAGE_CACHE:-/var/cache/seatd-images}
}
# si RECIPE [seat-image build options...]: a quiet build with this build's guest-init and tools.
si() { "$SI" build "$@" --guest-init "$GUEST_INIT" --tools "$build/images:$build/signing" --quiet; }
# recipe_build_signed RECIPE: the recipe built into $t/img, signed with test_key's key, its
# Debian roots from CACHE: ok with the seconds it took (also in build_s), a bail out when
# there is no signed bundle.
recipe_build_signed() {
        local rc s0
        s0=$(date +%s)
        si "$1" --out "$t/img" --sign-key "$t/test.key" --cache "$CACHE" >"$t/out" 2>&1
        rc=$?
        build_s=$(($(date +%s) - s0))
        if [[ $rc == 0 && -f $t/img/manifest.json && -f $t/img/manifest.json.minisig ]]; then
                ok "seat-image build ${1##*/}: a signed bundle in $build_s s (cache $CACHE)"
        else
                not_ok "seat-image build ${1##*/} (rc=$rc)"
                diag_file "$t/out"
                bail "no image to boot"
        fi
}
# recipe_refused NAME REGEX [seat-image build options...]: the recipe on stdin, written to
# $t/bad/NAME.conf (beside the files it names), is refused by seat-image build with a
# message matching REGEX, and leaves neither an output directory nor a cache directory.
recipe_refused() {
        local name=$1 want=$2 rc
        shift 2
        mkdir -p "$t/bad"
        cat >"$t/bad/$name.conf"
        "$SI" build "$t/bad/$name.conf" --out "$t/bad/out" --cache "$t/bad/cache" --guest-init "$GUEST_INIT" "$@" \
                >"$t/out" 2>&1
        rc=$?
        if [[ $rc != 0 ]] && grep -Eq -- "$want" "$t/out" && [[ ! -e $t/bad/out && ! -e $t/bad/cache ]]; then
                ok "recipe $name refused before anything is written: $(grep -E -- "$want" "$t/out" | head -n1)"
        else
                not_ok "recipe $name refused with /$want/ and nothing written (rc=$rc)"
                diag_file "$t/out"
        fi
}

# ---------------------------------------------------------------- seat-web
# seat_web_conf FILE KEY=VALUE...: a seat-web.conf for a seat-web as it ships: its own
# state directory $t/web (made here once, its user's: nobody, as systemd's StateDirectory=
# gives it to User=), the build's assets (web/assets in the build tree: the pages composed
# there, web/assets/meson.build), the private seatd's participant and facilitator
# sockets, a facilitators file in the state directory.
seat_web_conf() {
        local f=$1 kv
        shift
        [[ -d $t/web ]] || { mkdir -m 0700 "$t/web" && chown nobody:nogroup "$t/web"; }
        {
                echo "state_dir = $t/web"
                echo "assets_dir = $build/web/assets"
                echo "participant_socket = $t/participant.sock"
                echo "facilitator_socket = $t/facilitator.sock"
                echo "facilitators_file = $t/web/facilitators"
                for kv; do echo "${kv%%=*} = ${kv#*=}"; done
        } >"$f"
}

# need_seat_web: WEB is the build's seat-web (the suite is skipped when it is not built).
need_seat_web() { WEB=$build/web/seat-web; need_built "$WEB"; }
# seat_web_up CONF PORT: seat-web as it ships, as its user (nobody), over TLS with the key
# and certificate --self-signed makes in its state directory (once), in the background
# (its pid in web_pid, stopped at exit; its log appended to $t/web.log), once it answers
# on PORT.
seat_web_up() {
        [[ -f $t/web/tls/cert.pem ]] ||
                setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$1" --self-signed >/dev/null 2>"$t/out" ||
                bail "seat-web --self-signed failed: $(cat "$t/out")"
        setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$WEB" -c "$1" >>"$t/web.log" 2>&1 &
        web_pid=$!
        [[ -n ${harness_web_hook-} ]] || { harness_web_hook=1; harness_on_exit 'kill_wait $web_pid'; }
        local up="curl -s -o /dev/null --cacert \"\$t/web/tls/cert.pem\" https://127.0.0.1:$2/"
        wait_until "$up"' || ! kill -0 "$web_pid" 2>/dev/null' && eval "$up" && return 0
        bail "seat-web did not answer on port $2 (within 120 s, or it exited): $(tail -3 "$t/web.log" 2>/dev/null)"
}

# ---------------------------------------------------------------- benches
# bench_seatd [KEY=VALUE...] [-- test-image options...]: a bench's private seatd on TCG
# (log level warning; debug, and the log kept in the file BENCH_LOG, when that is set),
# with the test image imported.
bench_seatd() {
        local -a keys=()
        while (($#)) && [[ $1 != -- ]]; do keys+=("$1"); shift; done
        [[ ${1-} != -- ]] || shift
        SEATD_LOG_LEVEL=warning
        if [[ -n ${BENCH_LOG:-} ]]; then SEATD_LOG_LEVEL=debug; harness_keep_log "$BENCH_LOG"; fi
        seatd_conf accel=tcg allow_tcg=true inspect_images=false "${keys[@]}"
        seatd_start
        image_import "$@"
}
# bench_provisions RUNS [COMMAND]: RUNS provisions of the test image, each timed to READY
# (ms, in the array prov); COMMAND SEAT runs after each measurement; the first seat is kept
# (its id in seat), the others released.
bench_provisions() {
        local i a s
        prov=() seat=
        for i in $(seq 1 "$1"); do
                a=$(ms); s=$(provision_id)
                prov+=($(($(ms) - a)))
                [[ -z ${2-} ]] || "$2" "$s"
                if [[ -z $seat ]]; then seat=$s; else "$CTL" -q release "$s" >/dev/null; fi
        done
}
# bench_naive RUNS: the naive cycle (naive_cycle) of the stored test image, RUNS times after
# its first boot, timed (ms, in the array naive); its domain is destroyed at exit.
bench_naive() {
        local dom=naive-bench-$$ i a
        harness_on_exit "\"\${VIRSH[@]}\" destroy $dom >/dev/null 2>&1"
        naive_domain_xml "$dom" "$t/naive" "$t/img"
        naive_cycle "$dom" "$t/naive" # its first boot
        naive=()
        for i in $(seq 1 "$1"); do
                a=$(ms); naive_cycle "$dom" "$t/naive"
                naive+=($(($(ms) - a)))
        done
}
# ms: milliseconds, from bash's own clock (no process started to read it).
ms() { local now=${EPOCHREALTIME/[.,]/}; echo $((now / 1000)); }
# median / median_int: of the numbers on stdin (the mean of the middle two of an even
# count; median_int truncates it).
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
median_int() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
# ratio A B: A / B with two decimals (0 when B is not above 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", (b > 0) ? a / b : 0}'; }
# wait_agent DOMAIN: until the domain's agent channel answers hello (2 minutes at most).
wait_agent() {
        python3 - "$1" <<'PY'
import socket, sys, time, re, subprocess
xml = subprocess.run(["virsh", "-q", "-c", "qemu:///system", "dumpxml", sys.argv[1]], capture_output=True, text=True).stdout
path = re.search(r"<channel type='unix'>\s*<source mode='bind' path='([^']+)'", xml).group(1)
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(path); s.settimeout(120)
        s.sendall(b'{"type":"hello","id":1,"version":1}\n')
        if b'"type":"hello"' in s.makefile("rb").readline(): sys.exit(0)
    except OSError:
        time.sleep(0.02)
sys.exit(1)
PY
}
# image_blob FILE: where the private seatd stores FILE of the imported test-image.
image_blob() {
        local id
        id=$("$CTL" --json image list | python3 -c "import json,sys; i=[x for x in json.load(sys.stdin)['images'] if x['name']=='test-image'][0]; print([f['identity'] for f in i['disks'] if f['file']=='$1'][0])")
        echo "$t/state/images/blobs/$id"
}
# naive_domain_xml NAME DIR IMAGE_DIR: the domain a sysadmin would write for the stored
# test image (its files in seatd's store, an overlay DIR/overlay.qcow2), in DIR/domain.xml;
# sets naive_base to the stored root disk the overlay sits on.
naive_domain_xml() {
        local name=$1 dir=$2 kernel initrd cmdline
        kernel=$(image_blob vmlinux) initrd=$(image_blob initramfs.img) naive_base=$(image_blob root.qcow2)
        cmdline=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cmdline"])' "$3/image.json")
        mkdir -p "$dir"
        sed -e "s|@NAME@|$name|" -e "s|@MEMORY_MIB@|256|" -e "s|@KERNEL@|$kernel|" -e "s|@INITRD@|$initrd|" \
                -e "s|@CMDLINE@|$cmdline|" -e "s|@DISK@|$dir/overlay.qcow2|" -e "s|@CONSOLE_LOG@|$dir/console.log|" \
                "$HARNESS_SRC/images/recipes/test-domain.xml.in" >"$dir/domain.xml"
}
# naive_cycle NAME DIR: destroy the naive domain, a new overlay, create it, wait for its agent.
naive_cycle() {
        "${VIRSH[@]}" destroy "$1" >/dev/null 2>&1 || true
        rm -f "$2/overlay.qcow2"; qemu-img create -q -f qcow2 -F qcow2 -b "$naive_base" "$2/overlay.qcow2"
        "${VIRSH[@]}" create "$2/domain.xml" >/dev/null
        wait_agent "$1"
}
