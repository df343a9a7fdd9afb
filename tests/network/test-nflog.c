/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nflog_packet_parse() on hand-built nfnetlink_log messages (issue 18, item 6). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/seat-test.h"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netlink.h>

#include "network/nflog.h"

typedef struct Msg {
        uint32_t words[256];
        size_t len;
} Msg;

static uint8_t *bytes(Msg *m) {
        return (uint8_t *) m->words;
}

static void msg_start(Msg *m, uint16_t type, uint8_t family) {
        memset(m, 0, sizeof(*m));
        struct nlmsghdr *h = (struct nlmsghdr *) bytes(m);
        h->nlmsg_type = type;
        struct nfgenmsg *g = NLMSG_DATA(h);
        g->nfgen_family = family;
        m->len = NLMSG_LENGTH(sizeof(*g));
}

static void put(Msg *m, uint16_t type, const void *data, size_t len) {
        struct nlattr *a = (struct nlattr *) (bytes(m) + m->len);
        a->nla_type = type;
        a->nla_len = (uint16_t) (NLA_HDRLEN + len);
        memcpy(bytes(m) + m->len + NLA_HDRLEN, data, len);
        m->len += NLA_ALIGN(NLA_HDRLEN + len);
}

static void put_hdr(Msg *m, uint16_t proto) {
        struct nfulnl_msg_packet_hdr h = { .hw_protocol = htons(proto), .hook = 1 };
        put(m, NFULA_PACKET_HDR, &h, sizeof(h));
}

static void put_prefix(Msg *m, const char *s) {
        put(m, NFULA_PREFIX, s, strlen(s) + 1);
}

static size_t msg_done(Msg *m) {
        ((struct nlmsghdr *) bytes(m))->nlmsg_len = (uint32_t) m->len;
        return m->len;
}

#define PKT_TYPE ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET)

/* An IPv4 TCP SYN from 10.213.0.6:40000 to 198.51.100.20:8080 (what the log copies: 64
 * bytes at most, here the headers). */
static const uint8_t ip4_tcp[] = {
        0x45, 0, 0, 60, 0, 0, 0x40, 0, 64, IPPROTO_TCP, 0, 0, 10, 213, 0, 6, 198, 51, 100, 20,
        0x9c, 0x40, 0x1f, 0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0xa0, 0x02, 0, 0, 0, 0, 0, 0,
};

/* A packet message of family: a packet header saying hw_proto (none when 0), then payload
 * and prefix. Its length. */
static size_t packet_msg(Msg *m, uint8_t family, uint16_t hw_proto, const void *payload, size_t len, const char *prefix) {
        msg_start(m, PKT_TYPE, family);
        if (hw_proto)
                put_hdr(m, hw_proto);
        put(m, NFULA_PAYLOAD, payload, len);
        put_prefix(m, prefix);
        return msg_done(m);
}

/* That message, parsed into p. */
static int parse_packet(Msg *m, uint8_t family, uint16_t hw_proto, const void *payload, size_t len, const char *prefix,
                        NflogPacket *p) {
        return nflog_packet_parse(bytes(m), packet_msg(m, family, hw_proto, payload, len, prefix), p);
}

TEST(ipv4_tcp) {
        Msg m;
        NflogPacket p;
        assert_int_equal(parse_packet(&m, AF_INET, 0x0800, ip4_tcp, sizeof(ip4_tcp), "seatd-deny s1 ", &p), 1);
        assert_string_equal(p.seat, "s1");
        assert_int_equal(p.family, AF_INET);
        assert_memory_equal(p.daddr, ((uint8_t[]) { 198, 51, 100, 20 }), 4);
        assert_int_equal(p.proto, IPPROTO_TCP);
        assert_int_equal(p.dport, 8080);
}

TEST(ipv4_udp_options_and_fragment) {
        Msg m;
        NflogPacket p;
        /* IHL 6 (one option word), UDP to 203.0.113.7:53 */
        uint8_t pkt[] = { 0x46, 0, 0, 40, 0, 0, 0, 0, 64, IPPROTO_UDP, 0, 0, 10, 213, 0, 6, 203, 0, 113, 7,
                          1, 1, 1, 0, 0x9c, 0x40, 0, 53, 0, 8, 0, 0 };
        /* no packet header: the payload decides */
        assert_int_equal(parse_packet(&m, AF_INET, 0, pkt, sizeof(pkt), "seatd-deny seat_2-x ", &p), 1);
        assert_string_equal(p.seat, "seat_2-x");
        assert_int_equal(p.proto, IPPROTO_UDP);
        assert_int_equal(p.dport, 53);

        /* a later fragment: no ports */
        pkt[6] = 0x00;
        pkt[7] = 0x10;
        assert_int_equal(parse_packet(&m, AF_INET, 0, pkt, sizeof(pkt), "seatd-deny s1 ", &p), 1);
        assert_int_equal(p.family, AF_INET);
        assert_int_equal(p.proto, IPPROTO_UDP);
        assert_int_equal(p.dport, 0);

        /* the header cut before the ports: the address, no port */
        assert_int_equal(parse_packet(&m, AF_INET, 0, pkt, 24, "seatd-deny s1 ", &p), 1);
        assert_int_equal(p.family, AF_INET);
        assert_int_equal(p.dport, 0);
}

TEST(ipv6) {
        Msg m;
        NflogPacket p;
        uint8_t pkt[40 + 8 + 4] = { 0x60, 0, 0, 0, 0, 12, IPPROTO_DSTOPTS, 64 };
        struct in6_addr dst;
        assert_int_equal(inet_pton(AF_INET6, "2001:db8::1", &dst), 1);
        memcpy(pkt + 24, &dst, 16);
        pkt[40] = IPPROTO_TCP; /* destination options, 8 bytes, then TCP */
        pkt[41] = 0;
        pkt[48 + 2] = 0x01;
        pkt[48 + 3] = 0xbb;
        assert_int_equal(parse_packet(&m, AF_INET6, 0x86dd, pkt, sizeof(pkt), "seatd-deny s1 ", &p), 1);
        assert_int_equal(p.family, AF_INET6);
        assert_memory_equal(p.daddr, &dst, 16);
        assert_int_equal(p.proto, IPPROTO_TCP);
        assert_int_equal(p.dport, 443);
}

/* ARP or a tagged frame at the ingress hook: the seat, no address. */
static void count_packet(const NflogPacket *p, void *userdata) {
        (void) p;
        (*(int *) userdata)++;
}

/* A datagram whose last message's length is not a multiple of 4: NLMSG_NEXT() takes the
 * count left below 0, and the walk must stop there. The buffer past the datagram holds a
 * whole denied packet's message from before (a stale one): it must not be read. */
TEST(receive_stops_at_the_datagram) {
        int sv[2], n = 0;
        uint32_t buf[1024] = {};
        Msg stale;
        assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), 0);
        size_t sl = packet_msg(&stale, AF_INET, 0x0800, ip4_tcp, sizeof(ip4_tcp), "seatd-deny s1 ");
        memcpy((uint8_t *) buf + 200, bytes(&stale), sl);
        uint32_t dgram[50] = {}; /* 198 bytes: one NOOP message of 197 */
        struct nlmsghdr *h = (struct nlmsghdr *) dgram;
        h->nlmsg_len = 197;
        h->nlmsg_type = NLMSG_NOOP;
        assert_int_equal(send(sv[1], dgram, 198, 0), 198);
        assert_int_equal(nflog_receive(sv[0], (uint8_t *) buf, sizeof(buf), count_packet, &n), 0);
        assert_int_equal(n, 0);
        close(sv[0]);
        close(sv[1]);
}

TEST(not_ip) {
        Msg m;
        NflogPacket p;
        /* ARP, with a payload that looks like IPv4: is not */
        assert_int_equal(parse_packet(&m, AF_UNSPEC, 0x0806, ip4_tcp, sizeof(ip4_tcp), "seatd-deny s1 ", &p), 1);
        assert_int_equal(p.family, AF_UNSPEC);
        assert_int_equal(p.proto, 0);
        assert_int_equal(p.dport, 0);

        /* says IPv6, carries IPv4: unknown rather than wrong */
        assert_int_equal(parse_packet(&m, AF_INET6, 0x86dd, ip4_tcp, sizeof(ip4_tcp), "seatd-deny s1 ", &p), 1);
        assert_int_equal(p.family, AF_UNSPEC);
}

TEST(not_ours) {
        Msg m;
        NflogPacket p;
        const char *prefixes[] = { "other ", "seatd-deny ", "seatd-deny s1", "seatd-deny a/b ", "seatd-deny s 1 ",
                                   "seatd-deny 012345678901234567890123456789012 " };
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
                assert_int_equal(parse_packet(&m, AF_INET, 0, ip4_tcp, sizeof(ip4_tcp), prefixes[i], &p), 0);
        }
        /* no prefix at all */
        msg_start(&m, PKT_TYPE, AF_INET);
        put(&m, NFULA_PAYLOAD, ip4_tcp, sizeof(ip4_tcp));
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), 0);
        /* a prefix without its NUL, exactly the longest seat id */
        msg_start(&m, PKT_TYPE, AF_INET);
        put(&m, NFULA_PREFIX, "seatd-deny 01234567890123456789012345678901 ", 44);
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), 1);
        assert_string_equal(p.seat, "01234567890123456789012345678901");
        /* another message type */
        msg_start(&m, (NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_CONFIG, AF_INET);
        put_prefix(&m, "seatd-deny s1 ");
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), 0);
        msg_start(&m, (NFNL_SUBSYS_CTNETLINK << 8) | 0, AF_INET);
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), 0);
}

TEST(malformed) {
        Msg m;
        NflogPacket p;
        size_t len = packet_msg(&m, AF_INET, 0, ip4_tcp, sizeof(ip4_tcp), "seatd-deny s1 ");
        /* cut anywhere: never read past the end, never a wrong answer */
        for (size_t cut = 0; cut < len; cut++) {
                ((struct nlmsghdr *) bytes(&m))->nlmsg_len = (uint32_t) len;
                int r = nflog_packet_parse(bytes(&m), cut, &p);
                assert_true(r == -EBADMSG || r == 0);
        }
        /* nlmsg_len says less than the attributes need */
        ((struct nlmsghdr *) bytes(&m))->nlmsg_len = (uint32_t) (len - 8);
        assert_int_equal(nflog_packet_parse(bytes(&m), len, &p), -EBADMSG);
        /* an attribute longer than the message */
        msg_start(&m, PKT_TYPE, AF_INET);
        put_prefix(&m, "seatd-deny s1 ");
        ((struct nlattr *) (bytes(&m) + NLMSG_LENGTH(sizeof(struct nfgenmsg))))->nla_len = 200;
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), -EBADMSG);
        /* a packet header too short */
        msg_start(&m, PKT_TYPE, AF_INET);
        put(&m, NFULA_PACKET_HDR, "\x08", 1);
        put_prefix(&m, "seatd-deny s1 ");
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), -EBADMSG);
        /* no nfgenmsg */
        msg_start(&m, PKT_TYPE, AF_INET);
        m.len = NLMSG_HDRLEN;
        assert_int_equal(nflog_packet_parse(bytes(&m), msg_done(&m), &p), -EBADMSG);
}

TEST_MAIN("nflog")
