/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The DNS wire format as guest-probe needs it: one A or AAAA query, and a bounded parser for the
 * reply (which comes from the network, i.e. from whoever answers: treat it as hostile).
 * Pure functions of a buffer, fuzzed by tests/fuzz/fuzz-probe-dns.c.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_PORT 53
#define DNS_UDP_MAX 512         /* classic UDP payload limit; longer replies are truncated */
#define DNS_NAME_MAX 253        /* presentation form, without the final dot */
#define DNS_MAX_A 16            /* A records kept from one reply */
#define DNS_MAX_RECORDS 64      /* records looked at in one reply */
#define DNS_MAX_POINTER_HOPS 16 /* compression pointers followed in one name */

#define DNS_TYPE_A 1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_AAAA 28
#define DNS_CLASS_IN 1

typedef struct DnsReply {
        uint16_t id;
        uint8_t rcode;         /* 0 NOERROR, 2 SERVFAIL, 3 NXDOMAIN, ... */
        bool truncated;        /* TC bit */
        unsigned n_answers;    /* answer records in the reply (ANCOUNT, as parsed) */
        unsigned n_a;          /* A records for the question name (or its CNAME chain), kept */
        struct in_addr a[DNS_MAX_A];
        uint32_t ttl[DNS_MAX_A];
        unsigned n_aaaa;       /* the same of AAAA records (an AAAA query) */
        struct in6_addr aaaa[DNS_MAX_A];
} DnsReply;

/* Writes a recursive query of qtype (DNS_TYPE_A or DNS_TYPE_AAAA) for name (presentation
 * form, a trailing dot allowed) into buf. -EINVAL: not a valid name (empty label, label >
 * 63, name > 253, bytes outside [A-Za-z0-9_-]) or another qtype; -ENOBUFS: buf too small. */
int dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *buf, size_t size, size_t *ret_len);

/* Reads the (possibly compressed) name at *off into out (presentation form, lowercased, no
 * final dot, "." for the root) and advances *off past it in the message. Bounded: at most
 * DNS_MAX_POINTER_HOPS pointers, each pointing strictly backwards, 253 bytes of name.
 * -EBADMSG on anything malformed. out must hold DNS_NAME_MAX + 1 bytes. */
int dns_read_name(const uint8_t *msg, size_t len, size_t *off, char out[static DNS_NAME_MAX + 1]);

/* Parses a reply to the query (id, name, qtype): it must be a response (QR), carry the same
 * id, and have exactly that one question (name compared case-insensitively, that type,
 * class IN). Collects the A (or AAAA) records whose owner is the name or a CNAME target of
 * it; one of them of the wrong size is malformed, records of other types are passed over.
 * -EBADMSG: malformed; -ESRCH: a well-formed message that is not the reply to this query. */
int dns_parse_reply(const uint8_t *msg, size_t len, uint16_t id, const char *name, uint16_t qtype, DnsReply *ret);
