/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The seat DNS guard's judgement of one upstream answer (docs/egress.md "Names", "The DNS
 * guard"). dnsmasq puts every A/AAAA of an answer into the queried name's set and cannot
 * look at CNAME targets, so each answer first passes here: the CNAME/DNAME chain must
 * stay inside the seat's allowed names, every record must belong to the chain, every
 * address must be public, and the message must be well formed to its last byte. Pure
 * functions of buffers (fuzzed by tests/fuzz/fuzz-dnsguard.c); the upstream is hostile.
 *
 * Bounds: messages of at most DNSG_MSG_MAX bytes, names of at most 253 bytes reached
 * through at most DNSG_POINTER_HOPS compression pointers, each strictly backwards; at most
 * DNSG_RECORDS_MAX records in all sections together, each count checked against the bytes
 * left; chains of at most DNSG_CHAIN_MAX names.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNSG_MSG_MAX 16384      /* largest answer taken (TCP); more is "oversized" */
#define DNSG_UDP_MAX 4096       /* largest UDP answer taken from upstream */
#define DNSG_QUERY_MAX 1024     /* largest query taken from dnsmasq */
#define DNSG_NAME_MAX 253       /* presentation form, no final dot */
#define DNSG_POINTER_HOPS 16
#define DNSG_RECORDS_MAX 64
#define DNSG_CHAIN_MAX 8        /* the question's name and up to 7 aliases */

#define DNSG_RCODE_NOERROR 0
#define DNSG_RCODE_FORMERR 1
#define DNSG_RCODE_SERVFAIL 2
#define DNSG_RCODE_NXDOMAIN 3
#define DNSG_RCODE_REFUSED 5

/* The names a seat may resolve, as its profile writes them: "x" (x and every name below
 * it) or "*.x" (every name below x, not x). Borrowed. */
typedef struct DnsgPolicy {
        const char *const *names;
        size_t n_names;
} DnsgPolicy;

typedef struct DnsgQuery {
        uint16_t id;
        char name[DNSG_NAME_MAX + 1];
        uint16_t qtype, qclass;
        size_t question_end;  /* header + the question: what an error reply repeats */
        uint16_t udp_size;    /* what the asker takes over UDP: 512, or its EDNS size (<= DNSG_UDP_MAX) */
} DnsgQuery;

typedef enum DnsgVerdict {
        DNSG_PASS,       /* the answer, trimmed to header, question and answer section */
        DNSG_NXDOMAIN,   /* the chain leaves the allowed names, or an address is not public */
        DNSG_SERVFAIL,   /* malformed, oversized, lying counts, records outside the chain, loops */
        DNSG_TRUNCATED,  /* the upstream set TC: tell the asker to come back over TCP */
        DNSG_RCODE,      /* another rcode (SERVFAIL, REFUSED...): passed on without records */
} DnsgVerdict;

/* True when the policy covers the name (lowercase presentation form), with dnsmasq's
 * matching: whole labels; "x" covers x and below, "*.x" only below. */
bool dnsg_name_allowed(const DnsgPolicy *p, const char *name);

/* Reads the name at *off (compression allowed) into out, lowercased; labels may hold only
 * [a-z0-9_-] (anything else could forge a label boundary in the text form). Advances *off
 * past the name where it sits. -EBADMSG on anything malformed. */
int dnsg_read_name(const uint8_t *m, size_t n, size_t *off, char out[static DNSG_NAME_MAX + 1]);

/* A query from dnsmasq: QR clear, opcode QUERY, one question, no answer or authority
 * records, at most one additional record (EDNS OPT). -EBADMSG otherwise. */
int dnsg_parse_query(const uint8_t *m, size_t n, DnsgQuery *ret);

/* Judges the answer m (n bytes) to q, which was sent upstream with id upstream_id. With
 * DNSG_PASS the answer, trimmed, with q's id and no authority/additional records, is
 * written to out (*ret_len bytes; out holds DNSG_MSG_MAX). With DNSG_RCODE *ret_rcode is
 * the upstream's rcode. *ret_reason: a fixed string saying why it was not passed. */
DnsgVerdict dnsg_check_answer(const DnsgPolicy *p, const DnsgQuery *q, uint16_t upstream_id, const uint8_t *m,
                              size_t n, uint8_t *out, size_t *ret_len, uint8_t *ret_rcode, const char **ret_reason);

/* An answer with no records: q's header and question (from its message qm) with rcode
 * and, when truncated, TC. out holds DNSG_QUERY_MAX. Returns its length. */
size_t dnsg_error_reply(const DnsgQuery *q, const uint8_t *qm, uint8_t rcode, bool truncated, uint8_t *out);
