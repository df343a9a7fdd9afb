/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../lib/seat-test.h"

#include "network/profile.h"

static EgressProfile *parse_ok(const char *text) {
        EgressProfile *p = NULL;
        _cleanup_error_ SeatError *e = NULL;
        int r = egress_profile_parse(text, strlen(text), &p, &e);
        if (r < 0)
                fail_msg("'%s' refused: %s", text, e ? e->message : "?");
        return p;
}

/* Refused with the errno and a message containing want. */
static void parse_bad(const char *text, int err, const char *want) {
        EgressProfile *p = NULL;
        _cleanup_error_ SeatError *e = NULL;
        assert_int_equal(egress_profile_parse(text, strlen(text), &p, &e), -err);
        assert_null(p);
        assert_non_null(e);
        if (!strstr(e->message, want))
                fail_msg("message '%s' lacks '%s'", e->message, want);
}

TEST(basic) {
        _cleanup_egress_profile_ EgressProfile *p =
                parse_ok("# seat profile\n"
                         "allow tcp 198.51.100.10/32 port 8080\n"
                         "allow udp 198.51.100.0/24 port 53\n"
                         "allow icmp 203.0.113.0/24\n"
                         "allow tcp 0.0.0.0/0 port 443\n"
                         "dns 198.51.100.53\n"
                         "capture on\n"
                         "ipv6 deny\n");
        assert_int_equal(p->n_rules, 4);
        assert_int_equal(p->rules[0].proto, EGRESS_PROTO_TCP);
        assert_int_equal(p->rules[0].dest.prefixlen, 32);
        assert_int_equal(p->rules[0].port_lo, 8080);
        assert_int_equal(p->rules[0].port_hi, 8080);
        assert_int_equal(p->rules[1].dest.prefixlen, 24);
        assert_int_equal(p->rules[2].proto, EGRESS_PROTO_ICMP);
        assert_int_equal(p->rules[3].dest.prefixlen, 0);
        assert_int_equal(p->n_dns, 1);
        assert_true(p->capture);
        assert_false(p->ipv6);
        assert_false(p->dhcp);
        assert_false(p->dns_host);
        assert_false(egress_profile_has_names(p));

        _cleanup_free_ char *text = NULL;
        assert_int_equal(egress_profile_format(p, &text), 0);
        assert_string_equal(text, "ipv6 deny\ndhcp off\ncapture on snaplen 65535 max_mib 64\ndns 198.51.100.53\n"
                                  "allow tcp 198.51.100.10 port 8080\nallow udp 198.51.100.0/24 port 53\n"
                                  "allow icmp 203.0.113.0/24\nallow tcp 0.0.0.0/0 port 443\n");
}

TEST(names_ranges_v6) {
        _cleanup_egress_profile_ EgressProfile *p = parse_ok("allow name Example.TEST tcp port 443\n"
                                                             "allow udp 2001:db8::/32 port 5000-5010\r\n"
                                                             "ipv6 allow\n"
                                                             "dns host\n"
                                                             "dhcp on\n");
        assert_int_equal(p->n_rules, 2);
        assert_string_equal(p->rules[0].name, "example.test");
        assert_true(egress_profile_has_names(p));
        assert_int_equal(p->rules[1].dest.family, AF_INET6);
        assert_int_equal(p->rules[1].port_lo, 5000);
        assert_int_equal(p->rules[1].port_hi, 5010);
        assert_true(p->ipv6 && p->dns_host && p->dhcp);
}

/* "*.": every name below, at any depth (docs/egress.md); a star anywhere else is refused
 * (TEST(refused)). Rules naming one name share its sets (egress_profile_name_index). */
TEST(wildcard_names) {
        _cleanup_egress_profile_ EgressProfile *p = parse_ok("allow name *.Wild.test tcp port 443\n"
                                                             "allow tcp 198.51.100.10 port 80\n"
                                                             "allow name a.test udp port 53\n"
                                                             "allow name *.wild.test udp port 53\n");
        assert_string_equal(p->rules[0].name, "*.wild.test");
        assert_int_equal(egress_profile_name_index(p, 0), 0);
        assert_int_equal(egress_profile_name_index(p, 1), -1);
        assert_int_equal(egress_profile_name_index(p, 2), 2);
        assert_int_equal(egress_profile_name_index(p, 3), 0);
        assert_int_equal(egress_profile_name_index(p, 4), -1);
}

/* capture on [snaplen N] [max_mib N]: defaults filled in, canonical text round-trips; the
 * values out of range are in TEST(refused). */
TEST(capture) {
        _cleanup_egress_profile_ EgressProfile *p = parse_ok("capture on max_mib 3 snaplen 96\n");
        assert_true(p->capture);
        assert_int_equal(p->capture_snaplen, 96);
        assert_int_equal(p->capture_max_mib, 3);
        _cleanup_free_ char *text = NULL;
        assert_int_equal(egress_profile_format(p, &text), 0);
        assert_non_null(strstr(text, "capture on snaplen 96 max_mib 3\n"));
        _cleanup_egress_profile_ EgressProfile *q = parse_ok(text);
        assert_int_equal(q->capture_snaplen, 96);
        assert_int_equal(q->capture_max_mib, 3);
        _cleanup_egress_profile_ EgressProfile *d = parse_ok("capture on snaplen 262144\n");
        assert_int_equal(d->capture_snaplen, 262144);
        assert_int_equal(d->capture_max_mib, EGRESS_CAPTURE_MAX_MIB_DEFAULT);
        _cleanup_egress_profile_ EgressProfile *off = parse_ok("capture off\n");
        assert_false(off->capture);
        assert_int_equal(off->capture_max_mib, 0);
}

TEST(empty_is_deny_all) {
        _cleanup_egress_profile_ EgressProfile *p = parse_ok("");
        assert_int_equal(p->n_rules, 0);
        assert_false(p->ipv6);
}

TEST(refused) {
        static const struct {
                const char *text;
                int err;          /* the errno it is refused with */
                const char *want; /* in the message */
        } bad[] = {
                { "allow tcp 198.51.100.1/24 port 80\n", EINVAL, "line 1" },
                { "\nallow tcp 198.51.100.0/24 port 0\n", EINVAL, "line 2" },
                { "allow tcp 198.51.100.0/24 port 10-5\n", EINVAL, "N < M" },
                { "allow tcp 198.51.100.0/24 port 65536\n", EINVAL, "1-65535" },
                { "allow tcp 198.51.100.0/24 port 080\n", EINVAL, "1-65535" },
                { "allow tcp 198.51.100.0/24\n", EINVAL, "port" },
                { "allow icmp 198.51.100.0/24 port 1\n", EINVAL, "icmp takes no port" },
                { "allow sctp 198.51.100.0/24 port 1\n", EINVAL, "'tcp'" },
                { "allow tcp 169.254.169.254 port 80\n", EINVAL, "always blocked" },
                { "allow tcp 127.0.0.1 port 80\n", EINVAL, "always blocked" },
                { "allow udp 224.0.0.251 port 5353\n", EINVAL, "always blocked" },
                { "ipv6 allow\nallow tcp fe80::/64 port 1\n", EINVAL, "always blocked" },
                { "dns 169.254.169.253\n", EINVAL, "always blocked" },
                { "allow tcp 2001:db8::/32 port 1\n", EINVAL, "ipv6 allow" },
                { "dns 2001:db8::53\n", EINVAL, "ipv6 allow" },
                { "ipv6 deny\nipv6 allow\n", EINVAL, "twice" },
                { "capture maybe\n", EINVAL, "capture on" },
                { "dns 198.51.100.0/24\n", EINVAL, "single address" },
                { "dns 198.51.100.53\ndns 198.51.100.53\n", EINVAL, "twice" },
                { "dns 1.1.1.1\ndns 1.1.1.2\ndns 1.1.1.3\ndns 1.1.1.4\ndns 1.1.1.5\n", E2BIG, "4 DNS" },
                { "allow name -x.test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name a..test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name localhost tcp port 1\n", EINVAL, "DNS name" },
                { "allow name a.test icmp\n", EINVAL, "tcp or udp" },
                { "route 10.0.0.0/8\n", EINVAL, "unknown directive" },
                { "allow tcp 198.51.100.0/24 port 1 extra\n", EINVAL, "port" },
                { "allow\ttcp\x1b 1.2.3.4 port 1\n", EINVAL, "control" },
                /* a star anywhere but a leading "*." (TEST(wildcard_names)) */
                { "allow name *.test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name a.*.test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name *a.test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name **.a.test tcp port 1\n", EINVAL, "DNS name" },
                { "allow name *. tcp port 1\n", EINVAL, "DNS name" },
                /* capture on [snaplen N] [max_mib N] (TEST(capture)) */
                { "capture on snaplen 63\n", EINVAL, "snaplen is" },
                { "capture on snaplen 262145\n", EINVAL, "snaplen is" },
                { "capture on max_mib 0\n", EINVAL, "max_mib is" },
                { "capture on max_mib 4097\n", EINVAL, "max_mib is" },
                { "capture on max_mib 9999999999\n", EINVAL, "max_mib is" },
                { "capture on max_mib\n", EINVAL, "a number" },
                { "capture on max_mib 2 max_mib 3\n", EINVAL, "at most once" },
                { "capture off snaplen 100\n", EINVAL, "capture off" },
                { "capture on\ncapture on snaplen 100\n", EINVAL, "twice" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                parse_bad(bad[i].text, bad[i].err, bad[i].want);
}

TEST(nul) {
        static const char text[] = "capture on\0\n";
        EgressProfile *p = NULL;
        _cleanup_error_ SeatError *e = NULL;
        assert_int_equal(egress_profile_parse(text, sizeof(text) - 1, &p, &e), -EINVAL);
        assert_non_null(strstr(e->message, "NUL"));
}

TEST(caps) {
        char line[400];
        memset(line, 'a', sizeof(line) - 1);
        line[sizeof(line) - 1] = 0;
        parse_bad(line, E2BIG, "256 bytes");

        /* one rule more than the cap */
        size_t size = (EGRESS_PROFILE_MAX_RULES + 1) * 40 + 1, n = 0;
        _cleanup_free_ char *many = malloc(size);
        assert_non_null(many);
        for (unsigned i = 0; i < EGRESS_PROFILE_MAX_RULES + 1; i++)
                n += (size_t) snprintf(many + n, size - n, "allow tcp 198.51.100.%u port %u\n", i % 250, i + 1);
        parse_bad(many, E2BIG, "1024 allow rules");

        _cleanup_free_ char *huge = calloc(1, EGRESS_PROFILE_MAX_BYTES + 2);
        assert_non_null(huge);
        memset(huge, '\n', EGRESS_PROFILE_MAX_BYTES + 1);
        parse_bad(huge, E2BIG, "larger than");
}

TEST(addr) {
        EgressAddr a, b;
        char buf[64];
        assert_int_equal(egress_addr_parse("198.51.100.0/24", &a), 0);
        assert_int_equal(egress_addr_parse("198.51.100.7", &b), 0);
        assert_true(egress_addr_within(&b, &a));
        assert_false(egress_addr_within(&a, &b));
        assert_int_equal(egress_addr_format(&b, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "198.51.100.7");
        assert_int_equal(egress_addr_parse("2001:db8::/32", &a), 0);
        assert_int_equal(egress_addr_format(&a, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "2001:db8::/32");
        assert_int_equal(egress_addr_parse("1.2.3.4/33", &a), -EINVAL);
        assert_int_equal(egress_addr_parse("1.2.3/24", &a), -EINVAL);
        assert_int_equal(egress_addr_parse("/24", &a), -EINVAL);
        assert_int_equal(egress_addr_parse("1.2.3.4/", &a), -EINVAL);
}

TEST_MAIN("egress-profile")
