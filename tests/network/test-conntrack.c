/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* conntrack_entry_match() on hand-built ctnetlink dump messages (issue #13, finding 6). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "../lib/seat-test.h"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include "network/conntrack.h"

typedef struct Msg {
        uint8_t buf[1024];
        size_t len;
        size_t open[4]; /* offsets of the nests being written */
        int depth;
} Msg;

static void msg_start(Msg *m, uint8_t family) {
        memset(m, 0, sizeof(*m));
        struct nlmsghdr *h = (struct nlmsghdr *) m->buf;
        h->nlmsg_type = (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_NEW;
        struct nfgenmsg *g = NLMSG_DATA(h);
        g->nfgen_family = family;
        m->len = NLMSG_LENGTH(sizeof(*g));
}

static void put(Msg *m, uint16_t type, const void *data, size_t len) {
        struct nlattr *a = (struct nlattr *) (m->buf + m->len);
        a->nla_type = type;
        a->nla_len = (uint16_t) (NLA_HDRLEN + len);
        memcpy(m->buf + m->len + NLA_HDRLEN, data, len);
        m->len += NLA_ALIGN(NLA_HDRLEN + len);
}

static void nest(Msg *m, uint16_t type) {
        struct nlattr *a = (struct nlattr *) (m->buf + m->len);
        a->nla_type = type | NLA_F_NESTED;
        m->open[m->depth++] = m->len;
        m->len += NLA_HDRLEN;
}

static void end(Msg *m) {
        size_t at = m->open[--m->depth];
        ((struct nlattr *) (m->buf + at))->nla_len = (uint16_t) (m->len - at);
}

static size_t msg_done(Msg *m) {
        ((struct nlmsghdr *) m->buf)->nlmsg_len = (uint32_t) m->len;
        return m->len;
}

static void tuple(Msg *m, uint16_t type, const char *src, const char *dst, uint16_t sport, uint16_t dport) {
        struct in_addr s, d;
        uint8_t proto = 17;
        uint16_t sp = htons(sport), dp = htons(dport);
        inet_pton(AF_INET, src, &s);
        inet_pton(AF_INET, dst, &d);
        nest(m, type);
        nest(m, CTA_TUPLE_IP);
        put(m, CTA_IP_V4_SRC, &s, 4);
        put(m, CTA_IP_V4_DST, &d, 4);
        end(m);
        nest(m, CTA_TUPLE_PROTO);
        put(m, CTA_PROTO_NUM, &proto, 1);
        put(m, CTA_PROTO_SRC_PORT, &sp, 2);
        put(m, CTA_PROTO_DST_PORT, &dp, 2);
        end(m);
        end(m);
}

/* A masqueraded flow the guest opened: orig guest -> world, reply world -> uplink. */
static size_t flow(Msg *m, const char *guest, bool zone) {
        msg_start(m, AF_INET);
        tuple(m, CTA_TUPLE_ORIG, guest, "198.51.100.10", 45678, 8082);
        tuple(m, CTA_TUPLE_REPLY, "198.51.100.10", "10.255.0.1", 8082, 45678);
        if (zone) {
                uint16_t z = htons(7);
                put(m, CTA_ZONE, &z, 2);
        }
        return msg_done(m);
}

/* A message whose original tuple holds only a source address of len bytes; the tuple is
 * left open for what the caller adds. */
static void orig_src_open(Msg *m, const void *src, size_t len) {
        msg_start(m, AF_INET);
        nest(m, CTA_TUPLE_ORIG);
        nest(m, CTA_TUPLE_IP);
        put(m, CTA_IP_V4_SRC, src, len);
        end(m);
}

static struct in_addr ip(const char *s) {
        struct in_addr a;
        inet_pton(AF_INET, s, &a);
        return a;
}

TEST(match) {
        Msg m;
        ConntrackEntry e;
        size_t n = flow(&m, "10.214.0.2", true);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), 1);
        /* the original tuple, as sent, for the delete; and the zone */
        const struct nlattr *orig = (const struct nlattr *) (m.buf + NLMSG_LENGTH(sizeof(struct nfgenmsg)));
        assert_int_equal(e.tuple_len, orig->nla_len);
        assert_memory_equal(e.tuple, orig, e.tuple_len);
        assert_true(e.has_zone);
        assert_int_equal(ntohs(e.zone), 7);
        /* the reply's destination names an address too (the uplink's, here) */
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.255.0.1"), &e), 1);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("198.51.100.10"), &e), 1);
        /* another seat's guest */
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.6"), &e), 0);
        n = flow(&m, "10.214.0.2", false);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), 1);
        assert_false(e.has_zone);
}

TEST(other) {
        Msg m;
        ConntrackEntry e;
        /* IPv6 entries and other subsystems are not ours to parse */
        msg_start(&m, AF_INET6);
        size_t n = msg_done(&m);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), 0);
        n = flow(&m, "10.214.0.2", false);
        ((struct nlmsghdr *) m.buf)->nlmsg_type = (NFNL_SUBSYS_CTNETLINK_EXP << 8);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), 0);
}

TEST(malformed) {
        Msg m;
        ConntrackEntry e;
        size_t n = flow(&m, "10.214.0.2", false);
        /* shorter than its header says */
        assert_int_equal(conntrack_entry_match(m.buf, n - 4, ip("10.214.0.2"), &e), -EBADMSG);
        assert_int_equal(conntrack_entry_match(m.buf, 8, ip("10.214.0.2"), &e), -EBADMSG);
        /* an attribute longer than the message */
        struct nlattr *orig = (struct nlattr *) (m.buf + NLMSG_LENGTH(sizeof(struct nfgenmsg)));
        orig->nla_len = 2000;
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), -EBADMSG);
        /* an attribute shorter than its own header */
        n = flow(&m, "10.214.0.2", false);
        orig->nla_len = 2;
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), -EBADMSG);
        /* an address of the wrong size */
        orig_src_open(&m, "\x0a\xd6\x00", 3);
        end(&m);
        n = msg_done(&m);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), -EBADMSG);
        /* no original tuple at all */
        msg_start(&m, AF_INET);
        n = msg_done(&m);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), -EBADMSG);
        /* an original tuple too large to send back */
        orig_src_open(&m, "\x0a\xd6\x00\x02", 4);
        uint8_t pad[CONNTRACK_TUPLE_MAX] = {};
        put(&m, CTA_TUPLE_ZONE + 10, pad, sizeof(pad));
        end(&m);
        n = msg_done(&m);
        assert_int_equal(conntrack_entry_match(m.buf, n, ip("10.214.0.2"), &e), -EBADMSG);
}

TEST_MAIN("conntrack")
