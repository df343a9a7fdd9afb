/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS guard's judgement (network/dnsguard-parse.c) on hand-built answers: CNAMEs into
 * allowed and disallowed names, loops of CNAMEs and of compression pointers, counts that
 * lie, oversized and trailing bytes, records outside the chain, addresses not public. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/macro.h"
#include "network/dnsguard-parse.h"

static const char *const allowed[] = { "allowed.test", "*.wild.test", "other.test" };
static const DnsgPolicy policy = { .names = allowed, .n_names = ELEMENTSOF(allowed) };

#define UP_ID 0xbeef
#define CLIENT_ID 0x1234

typedef struct Msg {
        uint8_t b[DNSG_MSG_MAX + 64];
        size_t n;
} Msg;

static void put8(Msg *m, uint8_t v) {
        m->b[m->n++] = v;
}
static void put16(Msg *m, uint16_t v) {
        put8(m, (uint8_t) (v >> 8));
        put8(m, (uint8_t) v);
}
static void put32(Msg *m, uint32_t v) {
        put16(m, (uint16_t) (v >> 16));
        put16(m, (uint16_t) v);
}
static void put_name(Msg *m, const char *name) {
        while (*name) {
                size_t l = strcspn(name, ".");
                put8(m, (uint8_t) l);
                memcpy(m->b + m->n, name, l);
                m->n += l;
                name += l + (name[l] == '.');
        }
        put8(m, 0);
}
static void header(Msg *m, uint16_t id, uint8_t flags3, uint16_t an, uint16_t ns, uint16_t ar) {
        m->n = 0;
        put16(m, id);
        put8(m, flags3);
        put8(m, 0x80);
        put16(m, 1);
        put16(m, an);
        put16(m, ns);
        put16(m, ar);
}
static void question(Msg *m, const char *name) {
        put_name(m, name);
        put16(m, 1);
        put16(m, 1);
}
/* A record header; owner "" means a pointer to the question's name. */
static void rr(Msg *m, const char *owner, uint16_t type, uint16_t rdlen) {
        if (!*owner)
                put16(m, 0xc00c);
        else
                put_name(m, owner);
        put16(m, type);
        put16(m, 1);
        put32(m, 60);
        put16(m, rdlen);
}
static void rr_a(Msg *m, const char *owner, uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
        rr(m, owner, 1, 4);
        put8(m, a), put8(m, b), put8(m, c), put8(m, d);
}
static void rr_cname(Msg *m, const char *owner, uint16_t type, const char *target) {
        rr(m, owner, type, (uint16_t) (strlen(target) + 2));
        put_name(m, target);
}

static DnsgQuery query_for(const char *name) {
        Msg q;
        DnsgQuery ret;
        header(&q, CLIENT_ID, 0x01, 0, 0, 0);
        q.b[3] = 0;
        question(&q, name);
        assert_int_equal(dnsg_parse_query(q.b, q.n, &ret), 0);
        return ret;
}

static DnsgVerdict judge(const char *qname, const Msg *m, const char **ret_reason) {
        static uint8_t out[DNSG_MSG_MAX];
        DnsgQuery q = query_for(qname);
        size_t len = 0;
        uint8_t rcode = 0;
        DnsgVerdict v = dnsg_check_answer(&policy, &q, UP_ID, m->b, m->n, out, &len, &rcode, ret_reason);
        if (v == DNSG_PASS) { /* trimmed, the asker's id: and it passes again as it is */
                assert_true(len <= m->n);
                assert_int_equal(out[0] << 8 | out[1], CLIENT_ID);
                assert_int_equal(out[8] | out[9] | out[10] | out[11], 0);
                static uint8_t again[DNSG_MSG_MAX];
                size_t len2 = 0;
                const char *why = NULL;
                assert_int_equal(dnsg_check_answer(&policy, &q, CLIENT_ID, out, len, again, &len2, &rcode, &why), DNSG_PASS);
                assert_int_equal(len2, len);
        }
        return v;
}

/* One record of an answer built from a table. */
typedef struct Rr {
        const char *owner; /* "" means a pointer to the question's name; NULL ends a list */
        uint16_t type;     /* 1: A, data an IPv4 address; 5 CNAME, 39 DNAME: data the target */
        const char *data;
} Rr;

#define RRS_MAX 4

/* An answer to qname with its records rrs, and the verdict (and reason, where not NULL)
 * the guard must give it. */
typedef struct AnswerCase {
        const char *qname;
        Rr rrs[RRS_MAX];
        DnsgVerdict want;
        const char *why;
} AnswerCase;

/* A response header for UP_ID with an answer records announced, and the question qname. */
static void answer(Msg *m, const char *qname, uint16_t an) {
        header(m, UP_ID, 0x81, an, 0, 0);
        question(m, qname);
}

static void check_answers(const AnswerCase *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const AnswerCase *c = &cases[i];
                uint16_t an = 0;
                while (an < RRS_MAX && c->rrs[an].owner)
                        an++;
                Msg m;
                answer(&m, c->qname, an);
                for (size_t k = 0; k < an; k++) {
                        const Rr *r = &c->rrs[k];
                        uint8_t a[4];
                        if (r->type == 1) {
                                assert_int_equal(inet_pton(AF_INET, r->data, a), 1);
                                rr_a(&m, r->owner, a[0], a[1], a[2], a[3]);
                        } else
                                rr_cname(&m, r->owner, r->type, r->data);
                }
                const char *why = NULL;
                DnsgVerdict v = judge(c->qname, &m, &why);
                if (v != c->want)
                        fail_msg("case %zu '%s': verdict %d, want %d (%s)", i, c->qname, v, c->want, why ? why : "-");
                if (c->why && (!why || strcmp(why, c->why) != 0))
                        fail_msg("case %zu '%s': reason '%s', want '%s'", i, c->qname, why ? why : "-", c->why);
        }
}

TEST(names) {
        assert_true(dnsg_name_allowed(&policy, "allowed.test"));
        assert_true(dnsg_name_allowed(&policy, "x.allowed.test"));
        assert_false(dnsg_name_allowed(&policy, "xallowed.test"));
        assert_false(dnsg_name_allowed(&policy, "test"));
        assert_true(dnsg_name_allowed(&policy, "a.wild.test"));
        assert_true(dnsg_name_allowed(&policy, "b.c.wild.test"));
        assert_false(dnsg_name_allowed(&policy, "wild.test"));
        assert_false(dnsg_name_allowed(&policy, "evil.test"));

        Msg m = { .n = 0 };
        char name[DNSG_NAME_MAX + 1];
        size_t off = 0;
        put8(&m, 3), put8(&m, 'a'), put8(&m, '.'), put8(&m, 'b'), put8(&m, 0); /* a dot inside a label */
        assert_int_equal(dnsg_read_name(m.b, m.n, &off, name), -EBADMSG);
        m.n = 0, off = 0;
        put_name(&m, "MiXeD.Allowed.TEST");
        assert_int_equal(dnsg_read_name(m.b, m.n, &off, name), 0);
        assert_string_equal(name, "mixed.allowed.test");
        assert_int_equal(off, m.n);
}

TEST(plain_answer) {
        const char *why = NULL;
        Msg m;
        header(&m, UP_ID, 0x81, 1, 1, 1);
        question(&m, "allowed.test");
        rr_a(&m, "", 198, 51, 100, 10);
        rr(&m, "test", 6, 0);   /* an authority record (empty SOA rdata: not looked at) */
        put8(&m, 0);            /* OPT: root, type 41 */
        put16(&m, 41), put16(&m, 1232), put32(&m, 0), put16(&m, 0);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_PASS);
}

TEST(cname_allowed) {
        static const AnswerCase cases[] = {
                { "cname-in.allowed.test",
                  { { "", 5, "a.wild.test" }, { "a.wild.test", 5, "other.test" }, { "other.test", 1, "198.51.100.10" } },
                  DNSG_PASS, NULL },
        };
        check_answers(cases, ELEMENTSOF(cases));
}

TEST(cname_disallowed) {
        static const AnswerCase cases[] = {
                { "cname-out.allowed.test", { { "", 5, "evil.test" }, { "evil.test", 1, "203.0.113.66" } },
                  DNSG_NXDOMAIN, "a CNAME to a name not allowed" },
                /* deeper in the chain, and to the bare base of a wildcard */
                { "x.allowed.test", { { "", 5, "a.wild.test" }, { "a.wild.test", 5, "wild.test" } }, DNSG_NXDOMAIN, NULL },
                /* a DNAME out of the names, and one into them */
                { "x.allowed.test", { { "allowed.test", 39, "evil.test" } }, DNSG_NXDOMAIN, NULL },
                { "x.allowed.test", { { "allowed.test", 39, "wild.test" } }, DNSG_PASS, NULL },
        };
        check_answers(cases, ELEMENTSOF(cases));
}

TEST(cname_loops) {
        static const AnswerCase cases[] = {
                { "a.allowed.test", { { "", 5, "b.allowed.test" }, { "b.allowed.test", 5, "a.allowed.test" } },
                  DNSG_SERVFAIL, "a CNAME loop" },
                { "a.allowed.test", { { "", 5, "a.allowed.test" } }, DNSG_SERVFAIL, NULL }, /* to itself */
                /* two CNAMEs for one name */
                { "a.allowed.test", { { "", 5, "b.allowed.test" }, { "", 5, "c.allowed.test" } }, DNSG_SERVFAIL, NULL },
        };
        check_answers(cases, ELEMENTSOF(cases));

        /* a long chain of allowed names: over the limit */
        const char *why = NULL;
        Msg m;
        answer(&m, "c0.allowed.test", DNSG_CHAIN_MAX);
        for (int i = 0; i < DNSG_CHAIN_MAX; i++) {
                char owner[32], target[32];
                snprintf(owner, sizeof(owner), "c%d.allowed.test", i);
                snprintf(target, sizeof(target), "c%d.allowed.test", i + 1);
                rr_cname(&m, owner, 5, target);
        }
        assert_int_equal(judge("c0.allowed.test", &m, &why), DNSG_SERVFAIL);
}

TEST(pointer_loops) {
        const char *why = NULL;
        Msg m;
        answer(&m, "allowed.test", 1);
        size_t at = m.n;
        put16(&m, (uint16_t) (0xc000 | at)); /* owner points at itself */
        put16(&m, 1), put16(&m, 1), put32(&m, 60), put16(&m, 4), put32(&m, 0xc633640a);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);

        answer(&m, "allowed.test", 1);
        put16(&m, (uint16_t) (0xc000 | (m.n + 2))); /* forwards */
        put16(&m, 0xc00c);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);

        /* a CNAME target that points at the pointer that leads to it */
        answer(&m, "allowed.test", 1);
        rr(&m, "", 5, 2);
        put16(&m, (uint16_t) (0xc000 | (m.n)));
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
}

TEST(counts_lie) {
        const char *why = NULL;
        Msg m;
        answer(&m, "allowed.test", 3); /* three announced, one there */
        rr_a(&m, "", 198, 51, 100, 10);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);

        header(&m, UP_ID, 0x81, 1, 0, 60000);
        question(&m, "allowed.test");
        rr_a(&m, "", 198, 51, 100, 10);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
        assert_string_equal(why, "counts the message cannot hold");

        answer(&m, "allowed.test", 1); /* rdlength past the end */
        rr(&m, "", 1, 400);
        put32(&m, 0xc633640a);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);

        answer(&m, "allowed.test", 1); /* an A of 5 bytes */
        rr(&m, "", 1, 5);
        put32(&m, 0xc633640a), put8(&m, 0);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);

        answer(&m, "allowed.test", 1); /* bytes after the last record */
        rr_a(&m, "", 198, 51, 100, 10);
        put8(&m, 0);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
        assert_string_equal(why, "bytes after the last record");
}

TEST(oversize) {
        const char *why = NULL;
        static Msg m;
        answer(&m, "allowed.test", 0);
        memset(m.b + m.n, 0, DNSG_MSG_MAX + 1 - m.n);
        m.n = DNSG_MSG_MAX + 1;
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
        assert_string_equal(why, "an oversized answer");

        answer(&m, "allowed.test", DNSG_RECORDS_MAX + 1); /* more records than taken */
        for (int i = 0; i <= DNSG_RECORDS_MAX; i++)
                rr_a(&m, "", 198, 51, 100, 10);
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
}

TEST(outside_chain_and_rebinding) {
        static const AnswerCase cases[] = {
                /* other.test: allowed, but not asked for */
                { "allowed.test", { { "", 1, "198.51.100.10" }, { "other.test", 1, "198.51.100.11" } },
                  DNSG_SERVFAIL, "a record for a name not in the chain" },
                /* addresses not public */
                { "allowed.test", { { "", 1, "10.1.2.3" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "169.254.169.254" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "127.0.0.1" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "192.168.1.1" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "100.64.0.1" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "224.0.0.1" } }, DNSG_NXDOMAIN, NULL },
                { "allowed.test", { { "", 1, "0.1.2.3" } }, DNSG_NXDOMAIN, NULL },
        };
        check_answers(cases, ELEMENTSOF(cases));
}

/* AAAA answers: a public address passes; the IPv6 ranges a name may not open get NXDOMAIN,
 * among them the prefixes that carry an IPv4 address (mapped, NAT64) and the ULA where
 * clouds serve their IPv6 metadata (fd00:ec2::254). */
TEST(aaaa) {
        static const struct {
                const char *addr;
                DnsgVerdict want;
        } cases[] = {
                { "2001:db8:10::10", DNSG_PASS },         { "2a00:1450::1", DNSG_PASS },
                { "fd00:ec2::254", DNSG_NXDOMAIN },       { "fc00::1", DNSG_NXDOMAIN },
                { "fe80::1", DNSG_NXDOMAIN },             { "::1", DNSG_NXDOMAIN },
                { "::", DNSG_NXDOMAIN },                  { "ff02::1", DNSG_NXDOMAIN },
                { "::ffff:169.254.169.254", DNSG_NXDOMAIN }, { "::ffff:10.0.0.1", DNSG_NXDOMAIN },
                { "64:ff9b::a9fe:a9fe", DNSG_NXDOMAIN },  { "64:ff9b:1::a00:1", DNSG_NXDOMAIN },
                { "fec0::1", DNSG_NXDOMAIN },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                static uint8_t out[DNSG_MSG_MAX];
                uint8_t a6[16], rcode = 0;
                size_t len = 0;
                const char *why = NULL;
                Msg q, m;
                DnsgQuery dq;

                header(&q, CLIENT_ID, 0x01, 0, 0, 0);
                q.b[3] = 0;
                put_name(&q, "allowed.test");
                put16(&q, 28), put16(&q, 1);
                assert_int_equal(dnsg_parse_query(q.b, q.n, &dq), 0);
                assert_int_equal(dq.qtype, 28);

                assert_int_equal(inet_pton(AF_INET6, cases[i].addr, a6), 1);
                header(&m, UP_ID, 0x81, 1, 0, 0);
                put_name(&m, "allowed.test");
                put16(&m, 28), put16(&m, 1);
                rr(&m, "", 28, 16);
                memcpy(m.b + m.n, a6, 16);
                m.n += 16;
                DnsgVerdict v = dnsg_check_answer(&policy, &dq, UP_ID, m.b, m.n, out, &len, &rcode, &why);
                if (v != cases[i].want)
                        fail_msg("AAAA %s: verdict %d, want %d (%s)", cases[i].addr, v, cases[i].want, why ? why : "-");
        }
}

TEST(header_checks) {
        const char *why = NULL;
        Msg m;
        header(&m, UP_ID + 1, 0x81, 0, 0, 0); /* another id */
        question(&m, "allowed.test");
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
        answer(&m, "other.test", 0); /* another question */
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_SERVFAIL);
        header(&m, UP_ID, 0x83, 0, 0, 0); /* TC */
        question(&m, "allowed.test");
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_TRUNCATED);
        header(&m, UP_ID, 0x81, 0, 0, 0); /* SERVFAIL upstream: passed on, no records */
        m.b[3] = 0x82;
        question(&m, "allowed.test");
        assert_int_equal(judge("allowed.test", &m, &why), DNSG_RCODE);
        header(&m, UP_ID, 0x81, 0, 0, 0); /* NXDOMAIN: passed */
        m.b[3] = 0x83;
        question(&m, "nothere.allowed.test");
        assert_int_equal(judge("nothere.allowed.test", &m, &why), DNSG_PASS);
}

TEST(queries) {
        Msg q;
        DnsgQuery p;
        header(&q, 7, 0x01, 0, 0, 1);
        q.b[3] = 0;
        question(&q, "allowed.test");
        put8(&q, 0), put16(&q, 41), put16(&q, 1232), put32(&q, 0), put16(&q, 0);
        assert_int_equal(dnsg_parse_query(q.b, q.n, &p), 0);
        assert_int_equal(p.udp_size, 1232);
        assert_string_equal(p.name, "allowed.test");

        uint8_t out[DNSG_QUERY_MAX];
        size_t len = dnsg_error_reply(&p, q.b, DNSG_RCODE_NXDOMAIN, false, out);
        assert_int_equal(len, p.question_end);
        assert_int_equal(out[3] & 0x0f, DNSG_RCODE_NXDOMAIN);
        assert_int_equal(out[0] << 8 | out[1], 7);

        q.b[2] |= 0x80; /* a response is not a query */
        assert_int_equal(dnsg_parse_query(q.b, q.n, &p), -EBADMSG);
        q.b[2] &= 0x7f;
        assert_int_equal(dnsg_parse_query(q.b, q.n - 1, &p), -EBADMSG); /* cut short */
        q.b[5] = 2;                                                      /* two questions */
        assert_int_equal(dnsg_parse_query(q.b, q.n, &p), -EBADMSG);
}

TEST_MAIN("dnsguard")
