#!/usr/bin/env bash
# tests/bench/concurrency: SEATS seats of MEMORY_MIB provisioned at once (one seatctl
# provision each, all started together) against a private seatd: how long until every one
# is READY, whether any failed, and what an idle seat costs the host: its QEMU's RSS, the
# part of it that is TCG's translation cache (the code buffer mapping), and the host's
# MemAvailable drop per seat. Warm reset is off: this measures provisioning, not the saved
# states made after it. Prints numbers; asserts nothing about time.
#   usage: bench-concurrency.sh BUILD_DIR [SEATS [MEMORY_MIB]]
set -euo pipefail
# shellcheck source=../lib/seatd-harness.sh
. "$(dirname "$0")/../lib/seatd-harness.sh"
harness_bench
harness_build "${1:?usage: $0 BUILD_DIR [SEATS [MEMORY_MIB]]}"
seats=${2:-20} mem=${3:-128}
# (the harness's cleanup removes the seats, their networks and the work directory)
harness_workdir /var/tmp/seatd-bench-conc 0755
avail_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }

bench_seatd warm_reset=false -- --memory-mib "$mem"

before=$(avail_mib)
a=$(ms)
pids=()
for i in $(seq 1 "$seats"); do
  ( s=$(ms); "$CTL" -q --json provision --image test-image --participant "bench-$i" >"$t/p$i.json" 2>"$t/p$i.err"
    echo "$? $(($(ms) - s))" >"$t/p$i.rc" ) &
  pids+=($!)
done
wait "${pids[@]}" # (not seatd, also a child of this shell)
all_ready=$(($(ms) - a))
failed=0
for i in $(seq 1 "$seats"); do
  read -r rc took <"$t/p$i.rc"
  if [[ $rc != 0 ]]; then failed=$((failed + 1)); echo "seat $i failed after $took ms: $(head -c 300 "$t/p$i.err")"; fi
done

# Idle: give the guests a moment to settle after their boot, then measure every QEMU.
sleep 10
python3 - "$seats" "$before" "$(avail_mib)" "$("$CTL" --json list)" <<'PY' >"$t/mem"
import json, sys
n, before, after, listing = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
rss, tcg = [], []
for s in listing["seats"]:
    try:
        pid = int(open(f"/run/libvirt/qemu/{s['domain']}.pid").read())
        status = open(f"/proc/{pid}/status").read()
        rss.append(int([l for l in status.splitlines() if l.startswith("VmRSS:")][0].split()[1]) / 1024)
        # TCG's code buffer: the one large anonymous rwx mapping (tb-size, 1 GiB reserved).
        size, best, cur = 0, 0, None
        for line in open(f"/proc/{pid}/smaps"):
            f = line.split()
            if len(f) >= 5 and "-" in f[0] and len(f[1]) == 4:
                cur = f[1]
            elif f and f[0] == "Size:":
                size = int(f[1])
            elif f and f[0] == "Rss:" and cur == "rwxp" and size >= 256 * 1024:
                best = max(best, int(f[1]))
        tcg.append(best / 1024)
    except (OSError, IndexError, ValueError):
        pass
med = lambda v: sorted(v)[len(v) // 2] if v else 0
print(f"seats measured: {len(rss)} of {n}")
print(f"QEMU RSS per idle seat: median {med(rss):.0f} MiB, min {min(rss or [0]):.0f}, max {max(rss or [0]):.0f}")
print(f"  of which TCG translation cache: median {med(tcg):.0f} MiB")
print(f"host MemAvailable: {before} MiB before, {after} MiB after: {(before - after) / max(n, 1):.0f} MiB per seat")
print(f"SUMMARY rss_per_seat_mib={med(rss):.0f} tcg_cache_mib={med(tcg):.0f} host_mem_per_seat_mib={(before - after) / max(n, 1):.0f}")
PY
grep -v '^SUMMARY' "$t/mem"
echo "$seats seats of $mem MiB provisioned at once: all returned after $all_ready ms, $failed failed"
sum=$(sed -n 's/^SUMMARY //p' "$t/mem")
echo "concurrency: seats=$seats memory_mib=$mem failed=$failed all_ready_ms=$all_ready $sum"
