/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnsguard-parse.h"
#include "nft.h"
#include "profile.h"

#define TYPE_A 1
#define TYPE_CNAME 5
#define TYPE_AAAA 28
#define TYPE_DNAME 39
#define TYPE_OPT 41
#define CLASS_IN 1
#define HEADER 12
#define RR_FIXED 10 /* type, class, ttl, rdlength */

static uint16_t get16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

/* ---- names ---- */

static bool label_char(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int dnsg_read_name(const uint8_t *m, size_t n, size_t *off, char out[static DNSG_NAME_MAX + 1]) {
        size_t pos = *off, end = 0, len = 0, wire = 0;
        size_t limit = *off; /* a pointer must go before every label read so far: no loops */
        unsigned hops = 0;
        bool jumped = false;

        for (;;) {
                if (pos >= n)
                        return -EBADMSG;
                uint8_t l = m[pos];
                if ((l & 0xc0) == 0xc0) {
                        if (pos + 1 >= n || ++hops > DNSG_POINTER_HOPS)
                                return -EBADMSG;
                        size_t to = (size_t) (l & 0x3f) << 8 | m[pos + 1];
                        if (to >= limit)
                                return -EBADMSG;
                        if (!jumped)
                                end = pos + 2;
                        jumped = true;
                        limit = to;
                        pos = to;
                        continue;
                }
                if (l & 0xc0) /* 0x40, 0x80: extended label types, not taken */
                        return -EBADMSG;
                wire += 1u + l;
                if (wire > 255)
                        return -EBADMSG;
                if (l == 0) {
                        if (!jumped)
                                end = pos + 1;
                        break;
                }
                if (pos + 1 + l > n || len + (len ? 1u : 0u) + l > DNSG_NAME_MAX)
                        return -EBADMSG;
                if (len)
                        out[len++] = '.';
                for (size_t i = 0; i < l; i++) {
                        uint8_t c = m[pos + 1 + i];
                        if (c >= 'A' && c <= 'Z')
                                c = (uint8_t) (c - 'A' + 'a');
                        if (!label_char(c))
                                return -EBADMSG;
                        out[len++] = (char) c;
                }
                pos += 1u + l;
        }
        if (len == 0)
                out[len++] = '.';
        out[len] = 0;
        *off = end;
        return 0;
}

/* name is base or lies below it, on a label boundary. */
static bool at_or_below(const char *name, const char *base) {
        size_t a = strlen(name), b = strlen(base);
        if (a == b)
                return strcmp(name, base) == 0;
        return a > b && name[a - b - 1] == '.' && strcmp(name + a - b, base) == 0;
}

bool dnsg_name_allowed(const DnsgPolicy *p, const char *name) {
        for (size_t i = 0; i < p->n_names; i++) {
                const char *e = p->names[i];
                if (e[0] == '*' && e[1] == '.') {
                        if (strcmp(name, e + 2) != 0 && at_or_below(name, e + 2))
                                return true;
                } else if (at_or_below(name, e))
                        return true;
        }
        return false;
}

/* A DNAME maps every name below its target: fine when those are all allowed, i.e. the
 * target is itself allowed or is the base of a wildcard. */
static bool dname_target_allowed(const DnsgPolicy *p, const char *target) {
        if (dnsg_name_allowed(p, target))
                return true;
        for (size_t i = 0; i < p->n_names; i++)
                if (p->names[i][0] == '*' && p->names[i][1] == '.' && strcmp(p->names[i] + 2, target) == 0)
                        return true;
        return false;
}

/* ---- addresses ---- */

static bool in_prefix(int family, const uint8_t *addr, const char *prefix) {
        char text[INET6_ADDRSTRLEN + 4];
        uint8_t net[16];
        unsigned len = family == AF_INET ? 32 : 128;
        const char *slash = strchr(prefix, '/');
        size_t tl = slash ? (size_t) (slash - prefix) : strlen(prefix);

        if (tl >= sizeof(text))
                return false;
        memcpy(text, prefix, tl);
        text[tl] = 0;
        if (inet_pton(family, text, net) != 1)
                return false; /* another family's prefix */
        if (slash)
                len = (unsigned) atoi(slash + 1);
        for (unsigned bit = 0; bit < len; bit++) {
                uint8_t mask = (uint8_t) (0x80u >> (bit % 8));
                if ((addr[bit / 8] & mask) != (net[bit / 8] & mask))
                        return false;
        }
        return true;
}

static bool in_list(int family, const uint8_t *addr, const char *const *l) {
        for (; *l; l++)
                if (in_prefix(family, addr, *l))
                        return true;
        return false;
}

/* The ranges dnsmasq's bogus-nxdomain= lines name, and the accept rule never opens. */
static bool addr_public(int family, const uint8_t *addr) {
        if (family == AF_INET)
                return !in_list(family, addr, egress_blocked_ipv4) && !in_list(family, addr, nft_name_refused_ipv4);
        return !in_list(family, addr, egress_blocked_ipv6) && !in_list(family, addr, nft_name_refused_ipv6);
}

/* ---- messages ---- */

int dnsg_parse_query(const uint8_t *m, size_t n, DnsgQuery *ret) {
        DnsgQuery q = { .udp_size = 512 };

        if (n < HEADER || n > DNSG_QUERY_MAX)
                return -EBADMSG;
        if ((m[2] & 0x80) || (m[2] & 0x78) || get16(m + 4) != 1 || get16(m + 6) != 0 || get16(m + 8) != 0 ||
            get16(m + 10) > 1)
                return -EBADMSG;
        q.id = get16(m);
        size_t off = HEADER;
        if (dnsg_read_name(m, n, &off, q.name) < 0 || off + 4 > n)
                return -EBADMSG;
        q.qtype = get16(m + off);
        q.qclass = get16(m + off + 2);
        off += 4;
        q.question_end = off;
        if (get16(m + 10) == 1) { /* EDNS: root name, type OPT, class = the UDP size */
                if (off + 1 + RR_FIXED > n || m[off] != 0 || get16(m + off + 1) != TYPE_OPT)
                        return -EBADMSG;
                uint16_t size = get16(m + off + 3), rdlen = get16(m + off + 9);
                off += 1 + RR_FIXED;
                if (rdlen > n - off)
                        return -EBADMSG;
                off += rdlen;
                q.udp_size = size < 512 ? 512 : size > DNSG_UDP_MAX ? DNSG_UDP_MAX : size;
        }
        if (off != n)
                return -EBADMSG;
        *ret = q;
        return 0;
}

size_t dnsg_error_reply(const DnsgQuery *q, const uint8_t *qm, uint8_t rcode, bool truncated, uint8_t *out) {
        memcpy(out, qm, q->question_end);
        put16(out, q->id); /* qm may carry the id it went upstream with */
        out[2] = (uint8_t) (0x80 | (qm[2] & 0x01) | (truncated ? 0x02 : 0)); /* QR, RD as asked */
        out[3] = (uint8_t) (0x80 | (rcode & 0x0f));                          /* RA */
        put16(out + 4, 1);
        put16(out + 6, 0);
        put16(out + 8, 0);
        put16(out + 10, 0);
        return q->question_end;
}

typedef struct Record {
        char owner[DNSG_NAME_MAX + 1];
        char target[DNSG_NAME_MAX + 1]; /* CNAME, DNAME */
        uint16_t type;
        uint8_t addr[16];               /* A, AAAA */
        bool used;
} Record;

/* One resource record at *off; with rec, its owner and what the policy looks at. */
static int read_rr(const uint8_t *m, size_t n, size_t *off, Record *rec) {
        char owner[DNSG_NAME_MAX + 1];
        if (dnsg_read_name(m, n, off, owner) < 0 || n - *off < RR_FIXED)
                return -EBADMSG;
        uint16_t type = get16(m + *off), class = get16(m + *off + 2), rdlen = get16(m + *off + 8);
        *off += RR_FIXED;
        if (rdlen > n - *off)
                return -EBADMSG;
        size_t rd = *off, rd_end = *off + rdlen;
        *off = rd_end;
        if (!rec)
                return 0;
        *rec = (Record) { .type = type };
        memcpy(rec->owner, owner, sizeof(owner));
        if (type == TYPE_A || type == TYPE_AAAA || type == TYPE_CNAME || type == TYPE_DNAME) {
                if (class != CLASS_IN)
                        return -EBADMSG;
        }
        if (type == TYPE_A || type == TYPE_AAAA) {
                if (rdlen != (type == TYPE_A ? 4 : 16))
                        return -EBADMSG;
                memcpy(rec->addr, m + rd, rdlen);
        } else if (type == TYPE_CNAME || type == TYPE_DNAME) {
                size_t t = rd;
                /* the target may point back into the message, but must end where rdata ends */
                if (dnsg_read_name(m, rd_end, &t, rec->target) < 0 || t != rd_end)
                        return -EBADMSG;
        }
        return 0;
}

static bool in_chain(char chain[][DNSG_NAME_MAX + 1], size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (!strcmp(chain[i], name))
                        return true;
        return false;
}

#define REJECT(v, why)                     \
        do {                               \
                *ret_reason = (why);       \
                return (v);                \
        } while (0)

/* The chain from the question through the answer's CNAMEs, each target allowed; DNAMEs
 * at or above a chain name with allowed targets; every other record owned by a chain name
 * and every address public. */
static DnsgVerdict check_chain(const DnsgPolicy *p, const DnsgQuery *q, Record *rr, size_t n_rr,
                               const char **ret_reason) {
        char chain[DNSG_CHAIN_MAX][DNSG_NAME_MAX + 1];
        size_t n_chain = 1;

        memcpy(chain[0], q->name, sizeof(chain[0]));
        for (;;) {
                Record *next = NULL;
                for (size_t i = 0; i < n_rr; i++)
                        if (rr[i].type == TYPE_CNAME && !strcmp(rr[i].owner, chain[n_chain - 1])) {
                                if (next)
                                        REJECT(DNSG_SERVFAIL, "two CNAMEs for one name");
                                next = &rr[i];
                        }
                if (!next)
                        break;
                next->used = true;
                if (in_chain(chain, n_chain, next->target))
                        REJECT(DNSG_SERVFAIL, "a CNAME loop");
                if (!dnsg_name_allowed(p, next->target))
                        REJECT(DNSG_NXDOMAIN, "a CNAME to a name not allowed");
                if (n_chain == DNSG_CHAIN_MAX)
                        REJECT(DNSG_SERVFAIL, "a CNAME chain over the limit");
                memcpy(chain[n_chain++], next->target, sizeof(chain[0]));
        }
        for (size_t i = 0; i < n_rr; i++) {
                Record *r = &rr[i];
                if (r->type == TYPE_DNAME) {
                        bool above = false;
                        for (size_t c = 0; c < n_chain && !above; c++)
                                above = at_or_below(chain[c], r->owner);
                        if (!above)
                                REJECT(DNSG_SERVFAIL, "a DNAME for a name not in the chain");
                        if (!dname_target_allowed(p, r->target))
                                REJECT(DNSG_NXDOMAIN, "a DNAME to a name not allowed");
                        continue;
                }
                if (r->type == TYPE_CNAME && !r->used)
                        REJECT(DNSG_SERVFAIL, "a CNAME outside the chain");
                if (!in_chain(chain, n_chain, r->owner))
                        REJECT(DNSG_SERVFAIL, "a record for a name not in the chain");
                if ((r->type == TYPE_A || r->type == TYPE_AAAA) &&
                    !addr_public(r->type == TYPE_A ? AF_INET : AF_INET6, r->addr))
                        REJECT(DNSG_NXDOMAIN, "an address that is not public (rebinding)");
        }
        return DNSG_PASS;
}

DnsgVerdict dnsg_check_answer(const DnsgPolicy *p, const DnsgQuery *q, uint16_t upstream_id, const uint8_t *m,
                              size_t n, uint8_t *out, size_t *ret_len, uint8_t *ret_rcode, const char **ret_reason) {
        char qname[DNSG_NAME_MAX + 1];
        Record rr[DNSG_RECORDS_MAX];

        *ret_reason = NULL;
        if (n > DNSG_MSG_MAX)
                REJECT(DNSG_SERVFAIL, "an oversized answer");
        if (n < HEADER)
                REJECT(DNSG_SERVFAIL, "a malformed answer (short header)");
        if (get16(m) != upstream_id || !(m[2] & 0x80) || (m[2] & 0x78) || get16(m + 4) != 1)
                REJECT(DNSG_SERVFAIL, "a malformed answer (not the response to the query)");
        size_t off = HEADER;
        if (dnsg_read_name(m, n, &off, qname) < 0 || n - off < 4 || strcmp(qname, q->name) != 0 ||
            get16(m + off) != q->qtype || get16(m + off + 2) != q->qclass)
                REJECT(DNSG_SERVFAIL, "a malformed answer (another question)");
        off += 4;
        if (m[2] & 0x02)
                REJECT(DNSG_TRUNCATED, "truncated over UDP");
        uint8_t rcode = m[3] & 0x0f;
        if (rcode != DNSG_RCODE_NOERROR && rcode != DNSG_RCODE_NXDOMAIN) {
                *ret_rcode = rcode;
                REJECT(DNSG_RCODE, "an error from the upstream");
        }
        size_t an = get16(m + 6), ns = get16(m + 8), ar = get16(m + 10);
        /* Each record takes at least 11 bytes (a root or pointer name and the fixed part). */
        if (an + ns + ar > DNSG_RECORDS_MAX || (an + ns + ar) * (1 + RR_FIXED) > n - off)
                REJECT(DNSG_SERVFAIL, "counts the message cannot hold");
        for (size_t i = 0; i < an; i++)
                if (read_rr(m, n, &off, &rr[i]) < 0)
                        REJECT(DNSG_SERVFAIL, "a malformed answer record");
        size_t answer_end = off;
        /* The rest is read only to prove the message well formed: it is not passed on. */
        for (size_t i = 0; i < ns + ar; i++)
                if (read_rr(m, n, &off, NULL) < 0)
                        REJECT(DNSG_SERVFAIL, "a malformed authority or additional record");
        if (off != n)
                REJECT(DNSG_SERVFAIL, "bytes after the last record");
        DnsgVerdict v = check_chain(p, q, rr, an, ret_reason);
        if (v != DNSG_PASS)
                return v;
        memcpy(out, m, answer_end);
        put16(out, q->id);
        put16(out + 8, 0);
        put16(out + 10, 0);
        *ret_len = answer_end;
        return DNSG_PASS;
}
