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

# denied_case SEAT DESC ARGS...: the probe must fail, and the seat's denied counter must grow
denied_case() {
  local s=$1 d=$2; shift 2
  local before after
  before=$(denied "$s")
  probe "$s" "$@"; local rc=$?
  sleep 0.2
  after=$(denied "$s")
  echo "denied packets: $before -> $after" >>"$t/out"
  if [[ $rc == 1 && $after -gt $before ]]; then ok "$d (denied: +$((after - before)))"; else not_ok "$d (probe rc $rc, denied $before -> $after)"; fi
}
