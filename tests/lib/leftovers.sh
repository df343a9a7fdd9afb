# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# What a test's private seatd leaves when the test kills it: its seats keep running (a
# restarted seatd adopts them), with their networks, egress chains and routing rules. A
# test's cleanup calls seat_leftovers_remove STATE_DIR to remove exactly those of its own
# seatd (domains whose disks are under STATE_DIR, seat ids found there), nothing else.

seat_leftovers_remove() {
        local state=${1:?usage: seat_leftovers_remove STATE_DIR} d id c
        local -a ids=()
        [[ -d $state ]] || return 0
        for d in $(virsh -q -c qemu:///system list --name 2>/dev/null); do
                [[ $d == seatd-* ]] || continue
                [[ $(virsh -q -c qemu:///system dumpxml "$d" 2>/dev/null) == *"file='$state/"* ]] &&
                        virsh -q -c qemu:///system destroy "$d" >/dev/null 2>&1
        done
        mapfile -t ids < <({
                ls "$state/seats" "$state/warm" 2>/dev/null
                ls "$state/evidence/quarantine" 2>/dev/null | sed -nE 's/^(s[0-9a-f]{8})-.*/\1/p'
        } | grep -E '^s[0-9a-f]{8}$' | sort -u)
        for id in "${ids[@]}"; do
                virsh -q -c qemu:///system net-destroy "seatd-$id" >/dev/null 2>&1
                # base chains first: they jump to the others
                for c in fwd in nat ing out to host; do nft delete chain inet seatd "$c-seat-$id" 2>/dev/null; done
                # then the "allow name" sets, which no rule uses any more
                for c in $(nft list table inet seatd 2>/dev/null | grep -oE "set n[46][0-9]+-seat-$id " | cut -d' ' -f2); do
                        nft delete set inet seatd "$c" 2>/dev/null
                done
                while ip rule del iif "seat-$id" 2>/dev/null; do :; done
        done
        return 0
}
