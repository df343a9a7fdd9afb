/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rules as meant (nft_seat_expected), without nftables: names, order, counters, the
 * deny tail, what the profile adds. Installing and reading back is tests/network/egress.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include "../lib/seat-test.h"

#include "common/jsonframe.h"
#include "network/nft.h"

static EgressProfile *profile(const char *text) {
        EgressProfile *p = NULL;
        assert_int_equal(egress_profile_parse(text, strlen(text), &p, NULL), 0);
        return p;
}

static NftSeatSpec spec_for(const EgressProfile *p) {
        NftSeatSpec s = {
                .seat = "s1", .bridge = "seat-s1", .uplink = "up0", .has_mac = true,
                .guest_mac = { 0x52, 0x54, 0x00, 0xd5, 0x00, 0x01 }, .profile = p,
        };
        assert_int_equal(inet_pton(AF_INET, "10.213.0.6", &s.guest), 1);
        assert_int_equal(inet_pton(AF_INET, "10.213.0.5", &s.host), 1);
        return s;
}

static json_object *chain(json_object *chains, const char *name) {
        for (size_t i = 0; i < json_object_array_length(chains); i++) {
                json_object *e = json_object_array_get_idx(chains, i);
                json_object *c = json_object_object_get(e, "chain");
                if (c && strcmp(json_object_get_string(json_object_object_get(c, "name")), name) == 0)
                        return e;
        }
        return NULL;
}

static const char *rule_text(json_object *e, size_t i) {
        return json_object_to_json_string_ext(json_object_array_get_idx(json_object_object_get(e, "rules"), i),
                                              JSON_C_TO_STRING_PLAIN);
}

/* Rule i of chain e holds needle (a run of expectations, one table). */
typedef struct RuleHas {
        size_t rule;
        const char *needle;
} RuleHas;

static void expect_rules(json_object *e, const RuleHas *has, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!strstr(rule_text(e, has[i].rule), has[i].needle))
                        fail_msg("rule %zu lacks '%s': %s", has[i].rule, has[i].needle, rule_text(e, has[i].rule));
}

TEST(chains) {
        _cleanup_egress_profile_ EgressProfile *p = profile("allow tcp 198.51.100.10 port 8080\n");
        NftSeatSpec s = spec_for(p);
        _cleanup_json_ json_object *chains = NULL;

        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        assert_int_equal(json_object_array_length(chains), 6); /* no nat without masquerade */
        json_object *ing = chain(chains, "ing-seat-s1");
        const char *ingc = json_object_to_json_string_ext(json_object_object_get(ing, "chain"), JSON_C_TO_STRING_PLAIN);
        assert_non_null(strstr(ingc, "\"hook\":\"ingress\""));
        assert_non_null(strstr(ingc, "\"dev\":\"seat-s1\""));
        assert_non_null(strstr(rule_text(ing, 0), "\"right\":\"8021q\"}},{\"counter\":null},{\"drop\":null}]"));
        assert_non_null(strstr(rule_text(ing, 1), "\"right\":\"8021ad\"}},{\"counter\":null},{\"drop\":null}]"));
        assert_string_equal(rule_text(ing, 2), "[{\"match\":{\"op\":\"==\",\"left\":{\"meta\":{\"key\":\"protocol\"}},"
                                               "\"right\":{\"set\":[\"ip\",\"arp\"]}}},{\"counter\":null},{\"accept\":null}]");
        assert_string_equal(rule_text(ing, 4), "[{\"counter\":null},{\"drop\":null}]");
        assert_null(chain(chains, "nat-seat-s1"));
        json_object *fwd = chain(chains, "fwd-seat-s1");
        assert_non_null(fwd);
        assert_string_equal(json_object_to_json_string_ext(json_object_object_get(fwd, "chain"), JSON_C_TO_STRING_PLAIN),
                            "{\"family\":\"inet\",\"table\":\"seatd\",\"name\":\"fwd-seat-s1\",\"type\":\"filter\","
                            "\"hook\":\"forward\",\"prio\":0,\"policy\":\"accept\"}");
        assert_non_null(strstr(rule_text(fwd, 0), "\"jump\":{\"target\":\"out-seat-s1\"}"));
        assert_non_null(strstr(rule_text(fwd, 1), "\"jump\":{\"target\":\"to-seat-s1\"}"));

        json_object *out = chain(chains, "out-seat-s1");
        json_object *rules = json_object_object_get(out, "rules");
        size_t n = json_object_array_length(rules);
        /* spoofed MAC, spoofed IP, IPv6, not-the-uplink, blocked ranges, replies, 1 allow, log, drop */
        assert_int_equal(n, 9);
        static const RuleHas out_has[] = {
                { 0, "\"ether\",\"field\":\"saddr\"}},\"right\":\"52:54:00:d5:00:01\"" },
                { 1, "\"op\":\"!=\"" },
                { 1, "\"10.213.0.6\"" },
                { 2, "\"right\":\"ipv6\"" },
                { 3, "\"oifname\"}},\"right\":\"up0\"" },
                { 4, "{\"prefix\":{\"addr\":\"169.254.0.0\",\"len\":16}}" },
                { 5, "established" },
                { 6, "\"right\":\"198.51.100.10\"" },
                { 6, "\"right\":8080" },
                { 6, "{\"accept\":null}" },
                { 7, "\"log\":{\"prefix\":\"seatd-deny s1 \"}" },
                { 7, "{\"limit\":{\"rate\":50,\"burst\":100,\"per\":\"second\"}}" },
        };
        expect_rules(out, out_has, ELEMENTSOF(out_has));
        assert_string_equal(rule_text(out, 8), "[{\"counter\":null},{\"drop\":null}]");

        /* counters on every rule of every chain */
        for (size_t i = 0; i < json_object_array_length(chains); i++) {
                json_object *e = json_object_array_get_idx(chains, i);
                for (size_t j = 0; j < json_object_array_length(json_object_object_get(e, "rules")); j++)
                        assert_non_null(strstr(rule_text(e, j), "{\"counter\":null}"));
        }

        /* the host: nothing but replies without dns host / dhcp */
        json_object *host = chain(chains, "host-seat-s1");
        assert_int_equal(json_object_array_length(json_object_object_get(host, "rules")), 5);
        assert_null(strstr(json_object_to_json_string(host), "\"dport\""));
}

/* With a log group, every deny tail's log names it and the snaplen, in the form nft lists
 * back ({"prefix", "group", "snaplen"}); without one, only the prefix (the kernel log). */
TEST(log_group) {
        (void) state;
        EgressProfile *p = profile("allow tcp 198.51.100.10 port 8080\n");
        NftSeatSpec s = spec_for(p);
        s.log_group = 5213;
        json_object *chains = NULL;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        const char *names[] = { "out-seat-s1", "to-seat-s1", "host-seat-s1", "ing-seat-s1" };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                json_object *e = chain(chains, names[i]);
                assert_non_null(e);
                size_t n = json_object_array_length(json_object_object_get(e, "rules"));
                assert_true(n >= 2);
                assert_non_null(strstr(rule_text(e, n - 2),
                                       "{\"log\":{\"prefix\":\"seatd-deny s1 \",\"group\":5213,\"snaplen\":64}}"));
                assert_string_equal(rule_text(e, n - 1), "[{\"counter\":null},{\"drop\":null}]");
        }
        json_object_put(chains);
        egress_profile_free(p);
}

TEST(profile_options) {
        _cleanup_egress_profile_ EgressProfile *p = profile("dhcp on\ndns host\ndns 198.51.100.53\nipv6 allow\n"
                                                            "allow udp 2001:db8::/32 port 5000-5010\n"
                                                            "allow icmp 203.0.113.0/24\n");
        NftSeatSpec s = spec_for(p);
        s.masquerade = true;
        s.has_mac = false;
        _cleanup_json_ json_object *chains = NULL;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        assert_int_equal(json_object_array_length(chains), 7);
        assert_non_null(strstr(rule_text(chain(chains, "ing-seat-s1"), 2), "[\"ip\",\"arp\",\"ip6\"]"));
        json_object *nat = chain(chains, "nat-seat-s1");
        assert_non_null(strstr(rule_text(nat, 0), "{\"masquerade\":null}"));
        assert_non_null(strstr(rule_text(nat, 0), "\"up0\""));

        const char *out = json_object_to_json_string_ext(chain(chains, "out-seat-s1"), JSON_C_TO_STRING_PLAIN);
        assert_null(strstr(out, "ether"));
        assert_null(strstr(out, "\"right\":\"ipv6\"")); /* IPv6 allowed: no blanket drop */
        assert_non_null(strstr(out, "{\"prefix\":{\"addr\":\"fe80::\",\"len\":10}}"));
        assert_non_null(strstr(out, "{\"range\":[5000,5010]}"));
        assert_null(strstr(out, "ipv6-icmp"));
        assert_non_null(strstr(out, "\"right\":\"icmp\""));
        assert_non_null(strstr(out, "\"right\":\"198.51.100.53\""));

        json_object *host = chain(chains, "host-seat-s1");
        /* without a MAC (has_mac false): DHCP, the IP source check, replies, DNS ×2, log, drop */
        assert_int_equal(json_object_array_length(json_object_object_get(host, "rules")), 7);
        assert_non_null(strstr(rule_text(host, 0), "\"right\":67"));
        assert_non_null(strstr(json_object_to_json_string_ext(host, JSON_C_TO_STRING_PLAIN),
                               "\"protocol\":\"udp\",\"field\":\"dport\"}},\"right\":53"));
}

/* Issue #13, finding 11: DNS for "dns host" only to the host's address on the seat's own
 * bridge, not to every address of the host; DHCP only after the MAC check, from 0.0.0.0 or
 * the guest's address, to the broadcast or the host's address. */
TEST(host_chain) {
        _cleanup_egress_profile_ EgressProfile *p = profile("dhcp on\ndns host\n");
        NftSeatSpec s = spec_for(p);
        _cleanup_json_ json_object *chains = NULL;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        json_object *host = chain(chains, "host-seat-s1");
        /* MAC, DHCP, IP source, replies, DNS udp, DNS tcp, log, drop */
        assert_int_equal(json_object_array_length(json_object_object_get(host, "rules")), 8);

        assert_string_equal(rule_text(host, 0),
                            "[{\"match\":{\"op\":\"!=\",\"left\":{\"payload\":{\"protocol\":\"ether\",\"field\":\"saddr\"}},"
                            "\"right\":\"52:54:00:d5:00:01\"}},{\"counter\":null},{\"drop\":null}]");
        assert_string_equal(rule_text(host, 1),
                            "[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"saddr\"}},"
                            "\"right\":{\"set\":[\"0.0.0.0\",\"10.213.0.6\"]}}},"
                            "{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"daddr\"}},"
                            "\"right\":{\"set\":[\"10.213.0.5\",\"255.255.255.255\"]}}},"
                            "{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"udp\",\"field\":\"sport\"}},\"right\":68}},"
                            "{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"udp\",\"field\":\"dport\"}},\"right\":67}},"
                            "{\"counter\":null},{\"accept\":null}]");
        assert_string_equal(rule_text(host, 2),
                            "[{\"match\":{\"op\":\"!=\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"saddr\"}},"
                            "\"right\":\"10.213.0.6\"}},{\"counter\":null},{\"drop\":null}]");
        assert_non_null(strstr(rule_text(host, 3), "established"));
        for (size_t i = 4; i <= 5; i++) {
                const char *dns = rule_text(host, i);
                assert_non_null(strstr(dns, "{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"daddr\"}},"
                                            "\"right\":\"10.213.0.5\"}}"));
                assert_non_null(strstr(dns, i == 4 ? "\"protocol\":\"udp\",\"field\":\"dport\"}},\"right\":53}"
                                                   : "\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":53}"));
                assert_non_null(strstr(dns, "{\"accept\":null}"));
        }
        /* no rule accepts anything before the MAC check, nor port 53 without the address */
        for (size_t i = 0; i < json_object_array_length(json_object_object_get(host, "rules")); i++) {
                const char *t = rule_text(host, i);
                if (strstr(t, "\"right\":53}"))
                        assert_non_null(strstr(t, "\"right\":\"10.213.0.5\""));
        }

        /* Both need the host's address, one that is neither 0.0.0.0 nor the guest's; each
         * pair lists in ascending order, as nft lists it back. */
        _cleanup_error_ SeatError *e = NULL;
        json_object *none = NULL;
        s.host.s_addr = 0;
        assert_int_equal(nft_seat_expected(&s, &none, &e), -EINVAL);
        assert_non_null(strstr(e->message, "host's address"));
        assert_null(none);
        s = spec_for(p);
        s.host = s.guest;
        assert_int_equal(nft_seat_expected(&s, &none, NULL), -EINVAL);
        s = spec_for(p);
        assert_int_equal(inet_pton(AF_INET, "10.213.0.9", &s.host), 1);
        assert_int_equal(nft_seat_expected(&s, &none, NULL), 0);
        assert_non_null(strstr(rule_text(chain(none, "host-seat-s1"), 1), "[\"0.0.0.0\",\"10.213.0.6\"]"));
        assert_non_null(strstr(rule_text(chain(none, "host-seat-s1"), 1), "[\"10.213.0.9\",\"255.255.255.255\"]"));
        json_object_put(none);
        /* a profile without dhcp or dns host needs no host address */
        _cleanup_egress_profile_ EgressProfile *q = profile("");
        s = spec_for(q);
        s.host.s_addr = 0;
        assert_int_equal(nft_seat_expected(&s, &none, NULL), 0);
        json_object_put(none);
}

TEST(refused) {
        _cleanup_egress_profile_ EgressProfile *p = profile("allow name example.test tcp port 443\n");
        _cleanup_egress_profile_ EgressProfile *q = profile("");
        _cleanup_json_ json_object *chains = NULL;
        NftSeatSpec s = spec_for(p);
        _cleanup_error_ SeatError *e = NULL;

        /* A name needs an upstream for the seat's resolver, and not "dns host". */
        assert_int_equal(nft_seat_expected(&s, &chains, &e), -EINVAL);
        assert_non_null(strstr(e->message, "'dns ADDRESS'"));
        seat_error_free(TAKE_PTR(e));
        _cleanup_egress_profile_ EgressProfile *h =
                profile("dns host\ndns 198.51.100.53\nallow name example.test tcp port 443\n");
        s = spec_for(h);
        assert_int_equal(nft_seat_expected(&s, &chains, &e), -EINVAL);
        assert_non_null(strstr(e->message, "cannot be combined"));
        _cleanup_egress_profile_ EgressProfile *n = profile("dns 198.51.100.53\nallow name example.test tcp port 443\n");
        s = spec_for(n);
        s.host.s_addr = 0;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);

        s = spec_for(q);
        s.bridge = "seat-\"x";
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
        s.bridge = "seat-aaaaaaaaaaa";
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
        s.bridge = "up0";
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
        s = spec_for(q);
        s.seat = "s 1";
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
        s = spec_for(q);
        s.guest.s_addr = 0;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
        assert_null(chains);
}

/* Without an uplink nothing is forwarded: the out chain drops everything after the source
 * checks, and masquerade has nowhere to go. */
TEST(no_uplink) {
        _cleanup_egress_profile_ EgressProfile *p = profile("");
        _cleanup_json_ json_object *chains = NULL;
        NftSeatSpec s = spec_for(p);
        s.uplink = NULL;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        json_object *out = chain(chains, "out-seat-s1");
        assert_string_equal(rule_text(out, 3), "[{\"counter\":null},{\"drop\":null}]");
        assert_null(strstr(json_object_to_json_string(out), "oifname"));
        json_object_put(TAKE_PTR(chains));
        s.masquerade = true;
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), -EINVAL);
}

/* "allow name": a set per name (and family) before the chains, the accept rule on the set
 * that never opens a refused range, DNS only to the seat's resolver. */
TEST(names) {
        _cleanup_egress_profile_ EgressProfile *p = profile("dns 198.51.100.53\n"
                                                            "allow name example.test tcp port 443\n"
                                                            "allow name *.wild.test udp port 5000-5010\n"
                                                            "allow name example.test tcp port 8443\n");
        _cleanup_json_ json_object *chains = NULL;
        NftSeatSpec s = spec_for(p);

        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        assert_int_equal(json_object_array_length(chains), 8); /* 2 sets, 6 chains */
        assert_string_equal(json_object_to_json_string_ext(json_object_array_get_idx(chains, 0), JSON_C_TO_STRING_PLAIN),
                            "{\"set\":{\"family\":\"inet\",\"table\":\"seatd\",\"name\":\"n40-seat-s1\","
                            "\"type\":\"ipv4_addr\",\"flags\":[\"timeout\"],\"timeout\":300}}");
        assert_non_null(strstr(json_object_to_json_string(json_object_array_get_idx(chains, 1)), "n41-seat-s1"));
        json_object *out = chain(chains, "out-seat-s1");
        /* MAC, IP, IPv6, uplink, blocked, replies, 3 name rules (no rule to the upstream), log, drop */
        assert_int_equal(json_object_array_length(json_object_object_get(out, "rules")), 11);
        assert_string_equal(rule_text(out, 6),
                            "[{\"match\":{\"op\":\"==\",\"left\":{\"payload\":{\"protocol\":\"ip\",\"field\":\"daddr\"}},"
                            "\"right\":\"@n40-seat-s1\"}},{\"match\":{\"op\":\"!=\",\"left\":{\"payload\":{\"protocol\":\"ip\","
                            "\"field\":\"daddr\"}},\"right\":{\"set\":[{\"prefix\":{\"addr\":\"10.0.0.0\",\"len\":8}},"
                            "{\"prefix\":{\"addr\":\"100.64.0.0\",\"len\":10}},{\"prefix\":{\"addr\":\"172.16.0.0\",\"len\":12}},"
                            "{\"prefix\":{\"addr\":\"192.168.0.0\",\"len\":16}}]}}},{\"match\":{\"op\":\"==\",\"left\":"
                            "{\"payload\":{\"protocol\":\"tcp\",\"field\":\"dport\"}},\"right\":443}},{\"counter\":null},"
                            "{\"accept\":null}]");
        assert_non_null(strstr(rule_text(out, 7), "\"right\":\"@n41-seat-s1\""));
        assert_non_null(strstr(rule_text(out, 7), "\"range\":[5000,5010]"));
        assert_non_null(strstr(rule_text(out, 8), "\"right\":\"@n40-seat-s1\"")); /* the same name: its set */
        assert_non_null(strstr(rule_text(out, 8), "\"right\":8443"));
        assert_null(strstr(json_object_to_json_string(out), "198.51.100.53"));
        /* The guest asks the seat's resolver on the host's bridge address, udp and tcp. */
        const char *host = json_object_to_json_string(chain(chains, "host-seat-s1"));
        assert_non_null(strstr(host, "\"10.213.0.5\" } }, { \"match\": { \"op\": \"==\", \"left\": { \"payload\": { \"protocol\": \"udp\""));
        assert_non_null(strstr(host, "\"10.213.0.5\" } }, { \"match\": { \"op\": \"==\", \"left\": { \"payload\": { \"protocol\": \"tcp\""));
        json_object_put(TAKE_PTR(chains));

        /* With "ipv6 allow" each name has an IPv6 set too, and its own rule. */
        _cleanup_egress_profile_ EgressProfile *q = profile("ipv6 allow\ndns 198.51.100.53\nallow name example.test tcp port 443\n");
        s = spec_for(q);
        assert_int_equal(nft_seat_expected(&s, &chains, NULL), 0);
        assert_non_null(strstr(json_object_to_json_string(json_object_array_get_idx(chains, 1)),
                               "\"name\": \"n60-seat-s1\", \"type\": \"ipv6_addr\""));
        out = chain(chains, "out-seat-s1");
        assert_non_null(strstr(rule_text(out, 7), "\"right\":\"@n60-seat-s1\""));
        assert_non_null(strstr(rule_text(out, 7), "{\"prefix\":{\"addr\":\"fc00::\",\"len\":7}}"));
}

TEST_MAIN("nft-rules")
