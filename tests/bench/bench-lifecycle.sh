#!/usr/bin/env bash
# tests/bench/lifecycle: provision-to-ready, exec round trip through seatd, and reset, as
# medians, beside the naive script a sysadmin would write for a reset (virsh destroy, a
# new overlay, virsh create, wait for the agent) run in the same bench on the same image.
# Prints numbers; asserts nothing about time.
#   usage: bench-lifecycle.sh BUILD_DIR [RUNS]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [RUNS]}"
runs=${2:-5}
# (the harness's cleanup removes the seats, their networks and the work directory)
harness_workdir /var/tmp/seatd-bench-lifecycle 0755
[[ -n ${BENCH_DEBUG:-} ]] && set -x

bench_seatd

execs=() resets=()
bench_provisions "$runs"
for i in $(seq 1 $((runs * 4))); do
  a=$(ms); "$CTL" exec "$seat" -- /bin/true; b=$(ms)
  execs+=($((b - a)))
done
for i in $(seq 1 "$runs"); do
  a=$(ms); "$CTL" -q reset "$seat" >/dev/null; b=$(ms)
  resets+=($((b - a)))
done

# The naive cycle, on the same verified files, with the same domain settings.
bench_naive "$runs"

p=$(printf '%s\n' "${prov[@]}" | median_int) e=$(printf '%s\n' "${execs[@]}" | median_int)
r=$(printf '%s\n' "${resets[@]}" | median_int) n=$(printf '%s\n' "${naive[@]}" | median_int)
echo "provision-to-ready: ${prov[*]} ms (median $p)"
echo "exec of true through seatctl+seatd: median $e ms over ${#execs[@]} runs (includes starting seatctl)"
echo "reset (seatctl reset until READY): ${resets[*]} ms (median $r)"
echo "naive reset (virsh destroy, new overlay, virsh create, agent hello): ${naive[*]} ms (median $n)"
echo "ratio reset/naive: $(awk "BEGIN { printf \"%.2f\", $r / $n }")"
echo "lifecycle: provision_p50_ms=$p exec_p50_ms=$e reset_p50_ms=$r naive_reset_p50_ms=$n"
