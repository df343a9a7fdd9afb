/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Egress profiles (docs/egress.md): what a seat's guest may reach. A small line format,
 * one directive per line, parsed by a pure function of a buffer (fuzzed by
 * tests/fuzz/fuzz-egress-profile.c). Everything not named is denied; some destinations
 * are always denied whatever the profile says (network/nft.h).
 *
 *   # comment
 *   allow tcp 198.51.100.10/32 port 8080
 *   allow udp 198.51.100.0/24 port 5000-5010
 *   allow icmp 198.51.100.0/24
 *   allow name example.test tcp port 443     (the name and every name below it, through the
 *   allow name *.example.test udp port 53    seat's resolver; *.: only the names below)
 *   dns 198.51.100.53                        (udp+tcp 53 to that server)
 *   dns host                                 (the host's resolver on the seat bridge)
 *   dhcp on|off                              (the host's DHCP server on the seat bridge)
 *   capture on [snaplen N] [max_mib N] | capture off   (network/capture.h)
 *   ipv6 deny|allow
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "common/error.h"
#include "common/macro.h"

#define EGRESS_PROFILE_MAX_BYTES (64u * 1024u)
#define EGRESS_PROFILE_MAX_LINE 256u
#define EGRESS_PROFILE_MAX_RULES 1024u
#define EGRESS_PROFILE_MAX_DNS 4u
#define EGRESS_NAME_MAX 253u
/* capture: bytes kept of each packet, and the MiB its files may take in all. */
#define EGRESS_CAPTURE_SNAPLEN_MIN 64u
#define EGRESS_CAPTURE_SNAPLEN_MAX 262144u
#define EGRESS_CAPTURE_SNAPLEN_DEFAULT 65535u
#define EGRESS_CAPTURE_MAX_MIB_MIN 1u
#define EGRESS_CAPTURE_MAX_MIB_MAX 4096u
#define EGRESS_CAPTURE_MAX_MIB_DEFAULT 64u

typedef enum EgressProto {
        EGRESS_PROTO_TCP,
        EGRESS_PROTO_UDP,
        EGRESS_PROTO_ICMP, /* icmp for IPv4, icmpv6 for IPv6; no port */
        _EGRESS_PROTO_MAX,
} EgressProto;

typedef struct EgressAddr {
        int family;       /* AF_INET or AF_INET6 */
        uint8_t addr[16]; /* network byte order; host bits are zero */
        unsigned prefixlen;
} EgressAddr;

typedef struct EgressRule {
        EgressProto proto;
        EgressAddr dest;   /* unused when name is set */
        char *name;        /* "allow name …": a DNS name, lowercase, maybe "*."-prefixed; else NULL */
        uint16_t port_lo, port_hi; /* 0,0 for icmp */
        unsigned line;     /* where it was written, for messages */
} EgressRule;

typedef struct EgressProfile {
        EgressRule *rules;
        size_t n_rules;
        EgressAddr dns[EGRESS_PROFILE_MAX_DNS]; /* host addresses (/32, /128) */
        size_t n_dns;
        bool dns_host;
        bool dhcp;
        bool capture;
        unsigned capture_snaplen;  /* set (to the default if not given) when capture is on */
        unsigned capture_max_mib;
        bool ipv6;
} EgressProfile;

/* Destinations no profile can open, NULL-terminated ("169.254.0.0/16", …). */
extern const char *const egress_blocked_ipv4[];
extern const char *const egress_blocked_ipv6[];

const char *egress_proto_to_string(EgressProto p);

EgressProfile *egress_profile_free(EgressProfile *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(EgressProfile *, egress_profile_free)
#define _cleanup_egress_profile_ _cleanup_(egress_profile_freep)

/*
 * Parse a profile from len bytes (need not be NUL-terminated). Returns 0, or -EINVAL
 * (syntax or value, the message names the line and quotes it), -E2BIG (over a cap),
 * -ENOMEM.
 */
int egress_profile_parse(const char *buf, size_t len, EgressProfile **ret, SeatError **ret_error);
/* Read and parse a file of at most EGRESS_PROFILE_MAX_BYTES. */
int egress_profile_load(const char *path, EgressProfile **ret, SeatError **ret_error);
/* The canonical text of a profile: parsing it gives the same profile back. */
int egress_profile_format(const EgressProfile *p, char **ret);
/* True when the profile has "allow name" rules (the seat's resolver serves them). */
bool egress_profile_has_names(const EgressProfile *p);
/* The index of the first "allow name" rule with the same name as rule i: rules that name
 * one name share its nftables sets (numbered by that index). -1 when rule i has no name. */
int egress_profile_name_index(const EgressProfile *p, size_t i);

/* "198.51.100.0/24", "2001:db8::/32"; a bare address is a /32 or /128. Host bits must be
 * zero. Returns 0 or -EINVAL. */
int egress_addr_parse(const char *s, EgressAddr *ret);
/* Writes "a.b.c.d" or "a.b.c.d/len" (/32 and /128 are left out) into buf. */
int egress_addr_format(const EgressAddr *a, char *buf, size_t size);
/* True when every address of a lies inside b (same family). */
bool egress_addr_within(const EgressAddr *a, const EgressAddr *b);
