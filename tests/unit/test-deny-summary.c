/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The denied-flow table (seatd/deny-summary.c): counted per seat, destination, protocol and
 * port; handed out per seat, the most packets first, capped, the rest folded; bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>

#include "../lib/seat-test.h"

#include "common/jsonframe.h"
#include "network/nflog.h"
#include "deny-summary.h"

typedef struct Out {
        char seat[64][NFT_SEAT_NAME_MAX + 1];
        char json[64][256];
        size_t n;
} Out;

static void collect(const char *seat, json_object *data, void *userdata) {
        Out *o = userdata;
        if (o->n == 64)
                return;
        (void) snprintf(o->seat[o->n], sizeof(o->seat[0]), "%s", seat);
        (void) snprintf(o->json[o->n], sizeof(o->json[0]), "%s", json_object_to_json_string_ext(data, JSON_C_TO_STRING_PLAIN));
        o->n++;
}

static NflogPacket pkt(const char *seat, const char *dst, uint8_t proto, uint16_t port) {
        NflogPacket p = { .proto = proto, .dport = port };
        (void) snprintf(p.seat, sizeof(p.seat), "%s", seat);
        if (strchr(dst, ':')) {
                p.family = AF_INET6;
                assert_int_equal(inet_pton(AF_INET6, dst, p.daddr), 1);
        } else if (*dst) {
                p.family = AF_INET;
                assert_int_equal(inet_pton(AF_INET, dst, p.daddr), 1);
        }
        return p;
}

TEST(counts) {
        (void) state;
        DenyTable *t = deny_table_new();
        Out o = {};
        NflogPacket a = pkt("s1", "203.0.113.10", IPPROTO_TCP, 9443), b = pkt("s1", "2001:db8::1", IPPROTO_UDP, 53),
                    c = pkt("s2", "203.0.113.10", IPPROTO_TCP, 9443), d = pkt("s1", "", 0, 0);
        deny_table_add(t, &a, 1000);
        deny_table_add(t, &a, 2000);
        deny_table_add(t, &a, 3000);
        deny_table_add(t, &b, 1500);
        deny_table_add(t, &c, 1700);
        deny_table_add(t, &d, 1800);

        deny_table_flush(t, "s1", collect, &o);
        assert_int_equal(o.n, 3);
        assert_string_equal(o.seat[0], "s1");
        assert_string_equal(o.json[0], "{\"destination\":\"203.0.113.10\",\"protocol\":\"tcp\",\"port\":9443,\"count\":3,\"first_ms\":1000,\"last_ms\":3000}");
        assert_string_equal(o.json[1], "{\"destination\":\"2001:db8::1\",\"protocol\":\"udp\",\"port\":53,\"count\":1,\"first_ms\":1500,\"last_ms\":1500}");
        assert_string_equal(o.json[2], "{\"destination\":null,\"protocol\":null,\"port\":null,\"count\":1,\"first_ms\":1800,\"last_ms\":1800}");

        /* s1's are gone, s2's are still there */
        o.n = 0;
        deny_table_flush(t, "s1", collect, &o);
        assert_int_equal(o.n, 0);
        deny_table_flush(t, NULL, collect, &o);
        assert_int_equal(o.n, 1);
        assert_string_equal(o.seat[0], "s2");
        o.n = 0;
        deny_table_flush(t, NULL, collect, &o);
        assert_int_equal(o.n, 0);
        deny_table_free(t);
}

/* More destinations than a seat's records: the most packets first, one record for the rest. */
TEST(per_seat_cap) {
        (void) state;
        DenyTable *t = deny_table_new();
        Out o = {};
        for (int port = 1; port <= DENY_SUMMARY_PER_SEAT + 8; port++) {
                NflogPacket p = pkt("s1", "198.51.100.20", IPPROTO_TCP, (uint16_t) port);
                for (int k = 0; k < port; k++) /* port N: N packets */
                        deny_table_add(t, &p, 100 + port);
        }
        deny_table_flush(t, NULL, collect, &o);
        assert_int_equal(o.n, DENY_SUMMARY_PER_SEAT + 1);
        char want[64];
        (void) snprintf(want, sizeof(want), "\"port\":%d,\"count\":%d,", DENY_SUMMARY_PER_SEAT + 8, DENY_SUMMARY_PER_SEAT + 8);
        assert_non_null(strstr(o.json[0], want));
        /* the 8 smallest (ports 1..8: 36 packets) folded */
        assert_string_equal(o.json[DENY_SUMMARY_PER_SEAT], "{\"folded_destinations\":8,\"folded_count\":36,\"first_ms\":101,\"last_ms\":108}");
        deny_table_free(t);
}

/* The table is full: a new destination is counted for its seat, not kept. */
TEST(table_full) {
        (void) state;
        DenyTable *t = deny_table_new();
        Out o = {};
        for (int i = 0; i < DENY_SUMMARY_ENTRIES; i++) {
                char seat[16];
                (void) snprintf(seat, sizeof(seat), "f%d", i / DENY_SUMMARY_PER_SEAT);
                NflogPacket p = pkt(seat, "198.51.100.20", IPPROTO_UDP, (uint16_t) (i + 1));
                deny_table_add(t, &p, 1);
        }
        NflogPacket extra = pkt("late", "203.0.113.10", IPPROTO_TCP, 1);
        deny_table_add(t, &extra, 2);
        deny_table_add(t, &extra, 3);
        /* an existing flow still counts */
        NflogPacket again = pkt("f0", "198.51.100.20", IPPROTO_UDP, 1);
        deny_table_add(t, &again, 4);
        deny_table_flush(t, "late", collect, &o);
        assert_int_equal(o.n, 1);
        assert_string_equal(o.json[0], "{\"folded_destinations\":0,\"folded_count\":2,\"table_full_count\":2}");
        o.n = 0;
        deny_table_flush(t, "f0", collect, &o);
        assert_int_equal(o.n, DENY_SUMMARY_PER_SEAT);
        assert_non_null(strstr(o.json[0], "\"port\":1,\"count\":2,\"first_ms\":1,\"last_ms\":4}"));
        deny_table_free(t);
}

TEST_MAIN("deny-summary")
