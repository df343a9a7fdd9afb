# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# seat-probe.sh: a seat's network as the VM egress suites (egress-vm, names-vm,
# handover-vm) see it: what `seatctl status` says of it, and guest-probe run in its guest
# through `seatctl exec`. Source it after seatd-harness.sh (it uses $CTL, $t, json_field,
# ok and not_ok); it defines functions and runs nothing.
# shellcheck disable=SC2154 # $t: seatd-harness.sh's work directory

# denied SEAT, guest_ip SEAT, host_ip SEAT, bridge_of SEAT: from the seat's status.
denied() { "$CTL" --json status "$1" | json_field 'd["network"]["denied_packets"]'; }
guest_ip() { "$CTL" --json status "$1" | json_field 'd["network"]["guest"].split("/")[0]'; }
host_ip() { "$CTL" --json status "$1" | json_field 'd["network"]["host"]'; }
bridge_of() { "$CTL" --json status "$1" | json_field 'd["network"]["bridge"]'; }
# probe SEAT ARGS...: guest-probe in the guest; its one result line goes to $t/out
probe() { local s=$1; shift; "$CTL" exec --timeout 60 "$s" -- /bin/guest-probe "$@" >"$t/out" 2>&1; }

# net_diag SEAT: where a seat's path to its host stopped, appended to $t/out for not_ok (a
# flake seen a few times: after the 65535-port scan of the host's address the guest got no
# ARP reply from its host and nothing more was counted). Twice, a second apart, as a stalled
# queue does not move: the host's end of the guest's tap, the guest's own NIC counters and
# ARP table; then the guest's log, QEMU's view of the NIC, and the host's backlog drops per CPU.
net_diag() {
  local dom tap i
  dom=$("$CTL" --json status "$1" 2>/dev/null | json_field 'd["domain"]' 2>/dev/null)
  tap=$("${VIRSH[@]}" domiflist "$dom" 2>/dev/null | awk '$1 ~ /^vnet|^tap/ {print $1; exit}')
  for i in 1 2; do
    {
      echo "net_diag $i: domain ${dom:-?}, host tap ${tap:-?}: $(ip -s -o link show "${tap:-none}" 2>&1 | tr -s ' ' | cut -c1-500)"
      "$CTL" exec --timeout 10 "$1" -- cat /proc/net/dev /proc/net/arp 2>&1 | grep -E 'eth0|IP address|^10\.|rror' | sed 's/^/net_diag guest: /'
    } >>"$t/out"
    sleep 1
  done
  # A stalled virtio TX queue shows in the guest's log (the netdev watchdog) and in QEMU's
  # view of its tap (link down, or a peer that stopped taking frames).
  "$CTL" exec --timeout 10 "$1" -- dmesg 2>&1 | grep -iE 'watchdog|timed? ?out|eth0|virtio_net' | tail -5 |
    sed 's/^/net_diag guest log: /' >>"$t/out"
  "${VIRSH[@]}" qemu-monitor-command --hmp "${dom:-none}" 'info network' 2>&1 | head -8 |
    sed 's/^/net_diag qemu: /' >>"$t/out"
  # Its TX queue (1): inuse > 0 is a packet QEMU took but the tap did not (it waits for the tap
  # to take writes again); shadow_avail_idx behind the guest's is a kick QEMU never saw.
  "${VIRSH[@]}" qemu-monitor-command --hmp "${dom:-none}" \
    'info virtio-queue-status /machine/peripheral/net0/virtio-backend 1' 2>&1 |
    grep -E 'inuse|used_idx|signalled_used:|avail_idx|rror' | tr -s ' ' | paste -sd ' ' | sed 's/^/net_diag qemu tx queue: /' >>"$t/out"
  local _p d drops=
  while read -r _p d _; do drops+="$((16#$d)) "; done </proc/net/softnet_stat
  echo "net_diag host: backlog drops per CPU (softnet_stat): $drops" >>"$t/out"
}

# denied_case SEAT DESC ARGS...: the probe must fail, and the seat's denied counter must grow
denied_case() {
  local s=$1 d=$2; shift 2
  local before after
  before=$(denied "$s")
  probe "$s" "$@"; local rc=$?
  # The drop is counted once the frame leaves the guest's queue: awaited (up to 120 s: a
  # TCG guest on a loaded host may still be draining it), not read after a fixed sleep.
  if [[ $rc == 1 ]]; then wait_until 'after=$(denied "$s"); ((${after:-0} > before))'; else after=$(denied "$s"); fi
  echo "denied packets: $before -> $after" >>"$t/out"
  if [[ $rc == 1 && $after -gt $before ]]; then ok "$d (denied: +$((after - before)))"; else not_ok "$d (probe rc $rc, denied $before -> $after)"; fi
}
