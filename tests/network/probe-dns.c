/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "probe-dns.h"

#define DNS_HEADER 12
#define DNS_FLAG_QR 0x8000
#define DNS_FLAG_TC 0x0200
#define DNS_FLAG_RD 0x0100

static uint16_t get16(const uint8_t *p) {
        return (uint16_t) (p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v) {
        p[0] = (uint8_t) (v >> 8);
        p[1] = (uint8_t) v;
}

static bool label_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

/* The canonical form used for comparisons: lowercase, no final dot. */
static int dns_normalize(const char *name, char out[static DNS_NAME_MAX + 1]) {
        size_t n = strlen(name);

        if (n > 0 && name[n - 1] == '.')
                n--;
        if (n == 0 || n > DNS_NAME_MAX)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                out[i] = lower(name[i]);
        out[n] = 0;
        return 0;
}

int dns_build_query(uint16_t id, const char *name, uint16_t qtype, uint8_t *buf, size_t size, size_t *ret_len) {
        char norm[DNS_NAME_MAX + 1];
        size_t off = DNS_HEADER;

        if ((qtype != DNS_TYPE_A && qtype != DNS_TYPE_AAAA) || dns_normalize(name, norm) < 0)
                return -EINVAL;
        /* header + encoded name (one more byte than the text, plus the root) + type + class */
        if (size < DNS_HEADER + strlen(norm) + 2 + 4)
                return -ENOBUFS;

        memset(buf, 0, DNS_HEADER);
        put16(buf, id);
        put16(buf + 2, DNS_FLAG_RD);
        put16(buf + 4, 1); /* QDCOUNT */

        for (const char *label = norm; *label;) {
                const char *dot = strchr(label, '.');
                size_t l = dot ? (size_t) (dot - label) : strlen(label);

                if (l == 0 || l > 63)
                        return -EINVAL;
                for (size_t i = 0; i < l; i++)
                        if (!label_char(label[i]))
                                return -EINVAL;
                buf[off++] = (uint8_t) l;
                memcpy(buf + off, label, l);
                off += l;
                label += l + (dot ? 1 : 0);
                if (dot && !*label)
                        return -EINVAL; /* "a..": an empty label at the end */
        }
        buf[off++] = 0;
        put16(buf + off, qtype);
        put16(buf + off + 2, DNS_CLASS_IN);
        *ret_len = off + 4;
        return 0;
}

int dns_read_name(const uint8_t *msg, size_t len, size_t *off, char out[static DNS_NAME_MAX + 1]) {
        size_t pos = *off, end = 0, n = 0;
        unsigned hops = 0;
        bool jumped = false;

        for (;;) {
                if (pos >= len)
                        return -EBADMSG;
                uint8_t l = msg[pos];
                if ((l & 0xc0) == 0xc0) {
                        if (pos + 1 >= len || ++hops > DNS_MAX_POINTER_HOPS)
                                return -EBADMSG;
                        size_t target = (size_t) (l & 0x3f) << 8 | msg[pos + 1];
                        if (target >= pos) /* only backwards: no loops, no forward games */
                                return -EBADMSG;
                        if (!jumped)
                                end = pos + 2;
                        jumped = true;
                        pos = target;
                        continue;
                }
                if (l & 0xc0) /* 0x40, 0x80: extended label types, not used */
                        return -EBADMSG;
                if (l == 0) {
                        if (!jumped)
                                end = pos + 1;
                        break;
                }
                if (pos + 1 + l > len || n + (n ? 1 : 0) + l > DNS_NAME_MAX)
                        return -EBADMSG;
                if (n)
                        out[n++] = '.';
                for (size_t i = 0; i < l; i++) {
                        char c = (char) msg[pos + 1 + i];
                        if (!label_char(c))
                                return -EBADMSG; /* keeps what we print plain */
                        out[n++] = lower(c);
                }
                pos += 1 + (size_t) l;
        }
        if (n == 0)
                out[n++] = '.';
        out[n] = 0;
        *off = end;
        return 0;
}

/* One resource record's fixed part after its name. */
typedef struct DnsRecord {
        char owner[DNS_NAME_MAX + 1];
        uint16_t type, class;
        uint32_t ttl;
        size_t rdata, rdlength;
} DnsRecord;

static int dns_read_record(const uint8_t *msg, size_t len, size_t *off, DnsRecord *rr) {
        int r = dns_read_name(msg, len, off, rr->owner);
        if (r < 0)
                return r;
        if (*off + 10 > len)
                return -EBADMSG;
        rr->type = get16(msg + *off);
        rr->class = get16(msg + *off + 2);
        rr->ttl = get32(msg + *off + 4);
        rr->rdlength = get16(msg + *off + 8);
        rr->rdata = *off + 10;
        if (rr->rdata + rr->rdlength > len)
                return -EBADMSG;
        *off = rr->rdata + rr->rdlength;
        return 0;
}

int dns_parse_reply(const uint8_t *msg, size_t len, uint16_t id, const char *name, uint16_t qtype, DnsReply *ret) {
        char want[DNS_NAME_MAX + 1], qname[DNS_NAME_MAX + 1];
        size_t off = DNS_HEADER;
        DnsReply reply = {};
        int r;

        if ((qtype != DNS_TYPE_A && qtype != DNS_TYPE_AAAA) || dns_normalize(name, want) < 0)
                return -EINVAL;
        if (len < DNS_HEADER)
                return -EBADMSG;
        uint16_t flags = get16(msg + 2);
        if (!(flags & DNS_FLAG_QR) || get16(msg) != id)
                return -ESRCH;
        if (get16(msg + 4) != 1)
                return -ESRCH;
        reply.id = id;
        reply.rcode = flags & 0x0f;
        reply.truncated = flags & DNS_FLAG_TC;

        r = dns_read_name(msg, len, &off, qname);
        if (r < 0)
                return r;
        if (off + 4 > len)
                return -EBADMSG;
        if (strcmp(qname, want) != 0 || get16(msg + off) != qtype || get16(msg + off + 2) != DNS_CLASS_IN)
                return -ESRCH;
        off += 4;

        /* Answers only (authority and additional are not needed). A record counts when its
         * owner is the name we asked or the target of a CNAME met so far: answers come in
         * chain order from any sane server, and anything else is ignored, not trusted. */
        unsigned ancount = get16(msg + 6);
        for (unsigned i = 0; i < ancount; i++) {
                DnsRecord rr;

                if (i >= DNS_MAX_RECORDS)
                        return -EBADMSG;
                r = dns_read_record(msg, len, &off, &rr);
                if (r < 0)
                        return r;
                reply.n_answers++;
                if (rr.class != DNS_CLASS_IN || strcmp(rr.owner, want) != 0)
                        continue;
                if (rr.type == DNS_TYPE_CNAME) {
                        size_t t = rr.rdata;
                        r = dns_read_name(msg, rr.rdata + rr.rdlength, &t, want);
                        if (r < 0)
                                return r;
                        if (t != rr.rdata + rr.rdlength)
                                return -EBADMSG;
                } else if (rr.type == DNS_TYPE_A && qtype == DNS_TYPE_A) {
                        if (rr.rdlength != 4)
                                return -EBADMSG;
                        if (reply.n_a < DNS_MAX_A) {
                                memcpy(&reply.a[reply.n_a], msg + rr.rdata, 4);
                                reply.ttl[reply.n_a] = rr.ttl;
                                reply.n_a++;
                        }
                } else if (rr.type == DNS_TYPE_AAAA && qtype == DNS_TYPE_AAAA) {
                        if (rr.rdlength != 16)
                                return -EBADMSG;
                        if (reply.n_aaaa < DNS_MAX_A)
                                memcpy(&reply.aaaa[reply.n_aaaa++], msg + rr.rdata, 16);
                }
        }
        *ret = reply;
        return 0;
}
