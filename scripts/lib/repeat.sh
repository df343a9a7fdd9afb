# shellcheck shell=bash
# scripts/test --repeat N: one selection of suites run N times, one meson run each, with
# each test's failures reported per run. Sourced by scripts/test, whose run_suites,
# asan_env, tsan_env and phase it uses. A test that depends on timing fails in some runs
# only; run it beside a load (stress-ng --cpu 2) to find it.

# The tree of a sanitizer, built if it is not yet: its directory on stdout.
repeat_tree() { # none|address|thread
  case $1 in
    none) echo build ;;
    address) build_tree build-asan -Db_sanitize=address,undefined -Db_lundef=false >&2; echo build-asan ;;
    thread) build_tree build-tsan -Db_sanitize=thread -Db_lundef=false >&2; echo build-tsan ;;
  esac
}

# The tests of one meson log that did not pass: "suite/name result" lines.
repeat_failures() { # LOG.json
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1], "rb").read().split(b"\n"):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("result") not in ("OK", "EXPECTEDFAIL", "SKIP"):
        suite = (r.get("suite") or ["?"])[0].split(":")[-1]
        print("%s/%s %s" % (suite, r.get("name", "?"), r.get("result")))
PY
}

repeat_runs() { # N SANITIZER [meson selection args...]
  local n=$1 san=$2 dir i f line total_failed=0 envs=()
  shift 2
  local sel=("$@")
  if ((${#sel[@]} == 0)); then
    # every suite that boots no VM (under TSan: the ones its lane runs)
    case $san in
      thread) sel=(--suite unit --suite seatctl --suite security --no-suite integration) ;;
      *) sel=(--no-suite integration --no-suite mcp --no-suite image-build --no-suite web --no-suite range) ;;
    esac
  fi
  case $san in
    address) envs=("${asan_env[@]}") ;;
    thread) envs=("${tsan_env[@]}") ;;
  esac
  # (a VM suite named on purpose must boot its VMs, not skip)
  envs+=(SEATD_REQUIRE_VM=1)
  phase "repeat: the ${san/none/plain} build's tree"
  dir=$(repeat_tree "$san") || die "the $san build failed"
  local -A fails=()
  local ran=0
  for ((i = 1; i <= n; i++)); do
    phase "repeat: run $i of $n ($dir: ${sel[*]})"
    suites_failed=0
    run_suites "$dir" "repeat-$i" "${envs[@]}" "${sel[@]}" >"$dir/meson-logs/repeat-$i.out" 2>&1
    f=$(repeat_failures "$dir/meson-logs/repeat-$i.json")
    ran=$(grep -c '"result"' "$dir/meson-logs/repeat-$i.json" 2>/dev/null || echo 0)
    if [[ -z $f ]] && ((suites_failed == 0)); then
      echo "run $i: $ran tests, none failed"
    else
      [[ -n $f ]] || f="meson/run FAILED (meson-logs/repeat-$i.out)"
      echo "run $i: $ran tests, $(wc -l <<<"$f") failed: $(cut -d' ' -f1 <<<"$f" | tr '\n' ' ')"
      while read -r line; do
        fails[${line%% *}]+=" $i"
      done <<<"$f"
      total_failed=$((total_failed + 1))
    fi
  done
  echo
  if ((${#fails[@]} == 0)); then
    echo "scripts/test --repeat $n: every test passed in every run ($dir, $((SECONDS / 60)) min${stress_pid:+, beside stress-ng --cpu $stress})"
    return 0
  fi
  echo "scripts/test --repeat $n: $total_failed of $n runs had failures ($dir, $((SECONDS / 60)) min${stress_pid:+, beside stress-ng --cpu $stress}); each test's failed runs:"
  for line in "${!fails[@]}"; do
    set -- ${fails[$line]}
    printf '  %s: %d of %d (runs%s)\n' "$line" "$#" "$n" "${fails[$line]}"
  done | sort
  echo "(each run's output: $dir/meson-logs/repeat-N.out and .txt)"
  return 1
}
