#!/usr/bin/env bash
# tests/bench/verify: on a 1 GiB image, in one run: `image verify` of the stored copy beside
# `b2sum` of the same file, and `image import` beside a plain `cp` of the same file to the
# same filesystem. Medians of repeated runs; prints numbers, asserts nothing about time.
#   usage: bench-verify.sh BUILD_DIR [SIZE_MIB] [RUNS]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [SIZE_MIB] [RUNS]}"
size_mib=${2:-1024} runs=${3:-5}
harness_workdir /var/tmp/seatd-bench-verify
export SEATD_LOG_LEVEL=warning

now() { echo "${EPOCHREALTIME/,/.}"; }
calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

echo "making a ${size_mib} MiB image (random bytes) ..." >&2
mkdir -p "$t/img" "$t/keys" "$t/state"
head -c $((size_mib << 20)) /dev/urandom >"$t/img/disk.raw"
"$SIGN" keygen -W -p "$t/keys/k.pub" -s "$t/k.key" >/dev/null 2>&1
"$MANIFEST" --name bench --version 1 --out "$t/img/manifest.json" --disk "$t/img/disk.raw:raw"
"$SIGN" sign -s "$t/k.key" -m "$t/img/manifest.json" >/dev/null 2>&1
seatd_conf
seatd_start
export SEATD_SOCKET=$t/ctl.sock
cat "$t/img/disk.raw" >/dev/null # warm the page cache for everyone alike

imp=() cpt=() ver=() b2=()
for i in $(seq 1 "$runs"); do
  # import: a fresh store each time (the same version re-imported would be a no-op)
  seatd_stop
  rm -rf "$t/state"; mkdir -p "$t/state"
  seatd_start
  sync
  a=$(now); "$CTL" -q image import "$t/img/manifest.json" >/dev/null; sync; b=$(now)
  imp+=("$(calc "$b - $a")")
  rm -f "$t/copy.raw"; sync
  a=$(now); cp "$t/img/disk.raw" "$t/copy.raw"; sync; b=$(now)
  cpt+=("$(calc "$b - $a")")
  a=$(now); "$CTL" -q image verify bench >/dev/null; b=$(now)
  ver+=("$(calc "$b - $a")")
  a=$(now); b2sum "$t/img/disk.raw" >/dev/null; b=$(now)
  b2+=("$(calc "$b - $a")")
done

m_imp=$(printf '%s\n' "${imp[@]}" | median) m_cp=$(printf '%s\n' "${cpt[@]}" | median)
m_ver=$(printf '%s\n' "${ver[@]}" | median) m_b2=$(printf '%s\n' "${b2[@]}" | median)
mib_s=$(calc "$size_mib / $m_ver") b2_mib_s=$(calc "$size_mib / $m_b2")
printf 'image verify: median %.3f s (%.0f MiB/s) | b2sum: median %.3f s (%.0f MiB/s) | %d cores\n' \
  "$m_ver" "$mib_s" "$m_b2" "$b2_mib_s" "$(nproc)"
printf 'image import: median %.3f s | cp + sync: median %.3f s\n' "$m_imp" "$m_cp"
printf 'verify: mib_s=%.0f b2sum_mib_s=%.0f ratio_vs_b2sum=%.2f import_over_cp=%.2f\n' \
  "$mib_s" "$b2_mib_s" "$(calc "$m_b2 / $m_ver")" "$(calc "$m_imp / $m_cp")"
