/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * seatd's nftables table, `table inet seatd`, driven through libnftables' JSON API
 * (docs/egress.md). Each seat owns chains keyed by its bridge name B:
 *
 *   fwd-B   base, hook forward:  iifname B jump out-B; oifname B jump to-B
 *   in-B    base, hook input:    iifname B jump host-B
 *   nat-B   base, hook postrouting (only with masquerade): guest -> uplink masquerade
 *   out-B   what the guest sends through the host: spoofed source, IPv6, anything not
 *           leaving through the uplink (other seats), link-local/metadata/multicast are
 *           dropped first; then replies, then the profile's allows; then log + drop
 *   to-B    into the guest: replies only
 *   host-B  to the host itself: the guest's MAC first, then DHCP (from 0.0.0.0 or the
 *           guest's address, to the broadcast or the host's bridge address) when the
 *           profile serves it, then the guest's source address, replies, and DNS to the
 *           host's bridge address only when the profile serves it ("dns host", or the
 *           seat's resolver for "allow name")
 *   n4<I>-B, n6<I>-B  sets (timeout) of the addresses the seat's resolver answered for
 *           the profile's name I; out-B accepts them on the name's ports
 *   ing-B   base, hook ingress on the bridge device: only IPv4 and ARP frames (and IPv6
 *           when allowed) go on; VLAN-tagged and anything else is counted and dropped
 *
 * Every rule has a counter; every deny path ends in a rate-limited log rule with the
 * prefix "seatd-deny <seat> " and a counted drop. The log goes to nfnetlink_log group
 * spec->log_group (seatd's denied-flow summaries, network/nflog.h), or to the kernel log
 * when that is 0. Installing reads the table back and
 * compares it with what was meant: a difference is an error and the seat's chains are
 * removed again.
 */

#include <json-c/json.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"
#include "profile.h"

#define NFT_TABLE_FAMILY "inet"
#define NFT_TABLE_NAME "seatd"
#define NFT_IFNAME_MAX 15
#define NFT_SEAT_NAME_MAX 32
#define NFT_LOG_PREFIX "seatd-deny "
/* The log rule of every deny path: at most NFT_LOG_RATE packets a second (burst
 * NFT_LOG_BURST) per rule are logged; the drop after it counts them all. With a log group,
 * the first NFT_LOG_SNAPLEN bytes of each (from the network header) go to nfnetlink_log. */
#define NFT_LOG_RATE 50
#define NFT_LOG_BURST 100
#define NFT_LOG_SNAPLEN 64
#define NFT_LOG_GROUP_DEFAULT 5213

/* "allow name" (docs/egress.md "Names"): the seat's resolver (libvirt's dnsmasq on the
 * bridge) puts every address it answers for an allowed name into that name's sets,
 * n4<I>-<bridge> (IPv4) and, with "ipv6 allow", n6<I>-<bridge> (IPv6), I the index of the
 * name's first rule. An element lives NFT_NAME_SET_TIMEOUT_S seconds (dnsmasq adds it
 * without a timeout of its own; adding it again does not extend it); the resolver hands
 * out TTLs of at most NFT_NAME_MAX_TTL_S, so a guest asks again long before. */
#define NFT_NAME_SET_TIMEOUT_S 300
#define NFT_NAME_MAX_TTL_S 10
#define NFT_SET_NAME_MAX (2 + 4 + 1 + NFT_IFNAME_MAX)

/* What a name's answer can never open, beyond the always-blocked ranges: private and
 * shared address space (another seat, the host's networks, a rebinding attack on
 * something inside). The accept rule for a name's set excludes them, and the resolver
 * turns an answer holding any of them (or an always-blocked address) into NXDOMAIN. */
extern const char *const nft_name_refused_ipv4[];
extern const char *const nft_name_refused_ipv6[];

/* "n4<index>-<bridge>" or "n6<index>-<bridge>". */
void nft_name_set_name(int family, int index, const char *bridge, char buf[static NFT_SET_NAME_MAX + 1]);

typedef struct NftSeatSpec {
        const char *seat;       /* seat id: [A-Za-z0-9_-], at most 32; in the log prefix */
        const char *bridge;     /* the seat's bridge, e.g. "seat-s1" */
        const char *uplink;     /* the only interface the seat's traffic may leave through;
                                 * NULL: none, nothing is forwarded */
        struct in_addr guest;   /* the guest's one IPv4 address */
        struct in_addr host;    /* the host's address on the bridge (the guest's gateway):
                                 * where DHCP and DNS are served; needed when the profile
                                 * has "dhcp on" or "dns host" */
        bool has_mac;
        uint8_t guest_mac[6];   /* the guest's MAC (anti-spoofing) when has_mac */
        bool masquerade;        /* source NAT to the uplink's address */
        uint16_t log_group;     /* nfnetlink_log group of the deny log; 0: kernel log */
        unsigned name_timeout_s; /* how long a name's address stays in its set; 0:
                                 * NFT_NAME_SET_TIMEOUT_S (tests use a short one) */
        const EgressProfile *profile;
} NftSeatSpec;

typedef enum NftSeatState {
        NFT_SEAT_OK,        /* exactly what was meant */
        NFT_SEAT_CHANGED,   /* some chains or rules differ */
        NFT_SEAT_MISSING,   /* the table or all of the seat's chains are gone */
} NftSeatState;

const char *nft_seat_state_to_string(NftSeatState s);

typedef struct NftContext NftContext;

/* Opens a libnftables context (JSON in and out). Needs CAP_NET_ADMIN only when used. */
int nft_context_new(NftContext **ret, SeatError **ret_error);
NftContext *nft_context_free(NftContext *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(NftContext *, nft_context_free)
#define _cleanup_nft_context_ _cleanup_(nft_context_freep)

/* Checks names and the profile ("allow name" needs a "dns ADDRESS" upstream and the host's
 * address, and cannot be combined with "dns host"). */
int nft_seat_spec_validate(const NftSeatSpec *spec, SeatError **ret_error);

/* The seat's chains as meant: a JSON array of {"chain": {...}, "rules": [expr, …]}, in
 * nft's own canonical JSON (what `list table` gives back, counters as null), preceded by
 * {"set": {...}} entries for the names' sets. Pure. */
int nft_seat_expected(const NftSeatSpec *spec, json_object **ret, SeatError **ret_error);

/* Install (replacing the seat's old chains, if any, in the same transaction), read back,
 * compare. On any failure the seat's chains are removed and an error returned: the seat
 * must not start. */
int nft_seat_install(NftContext *c, const NftSeatSpec *spec, SeatError **ret_error);
/* Remove the seat's chains; absent already is fine. */
int nft_seat_remove(NftContext *c, const char *bridge, SeatError **ret_error);
/* Read the table back and compare with spec. */
int nft_seat_verify(NftContext *c, const NftSeatSpec *spec, NftSeatState *ret_state, SeatError **ret_error);
/* Packets counted by the seat's drop rules (out-B, to-B, host-B). */
int nft_seat_denied(NftContext *c, const char *bridge, uint64_t *ret_packets, SeatError **ret_error);

/* Every rule of the seat's out-, to- and host- chains as installed now, in order: a JSON
 * array of {"chain": "out"|"to"|"host", "rule": "ip daddr 198.51.100.10 tcp dport 8080
 * accept", "packets": N, "bytes": N}. The text is made from what nftables lists, so it
 * shows what is enforced, not what was meant. */
int nft_seat_counters(NftContext *c, const char *bridge, json_object **ret, SeatError **ret_error);

/* The names of the profile and what their sets hold now: a JSON array of {"name",
 * "proto", "ports", "addresses": [{"address", "expires_s"}], "packets", "bytes"} (the
 * counters of the name's accept rules). */
int nft_seat_names(NftContext *c, const NftSeatSpec *spec, json_object **ret, SeatError **ret_error);

/* Bridges that have chains in table inet seatd (NULL-terminated, strv_free() it). */
int nft_seat_bridges(NftContext *c, char ***ret, SeatError **ret_error);

/* The uplinks the seats in table inet seatd leave by (every seatd's: the interface their
 * out chains let traffic through), NULL-terminated, strv_free() it. */
int nft_seat_uplinks(NftContext *c, char ***ret, SeatError **ret_error);
