/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "network/netdef.h"

static void pool_bad(const char *s, unsigned sub) {
        _cleanup_error_ SeatError *e = NULL;
        NetPool p;
        assert_int_equal(netdef_pool_parse(s, sub, &p, &e), -EINVAL);
        assert_non_null(e);
}

static void test_pool(void **state) {
        NetPool p;
        assert_int_equal(netdef_pool_parse("10.213.0.0/16", 30, &p, NULL), 0);
        assert_int_equal(netdef_pool_size(&p), 16384);
        assert_int_equal(netdef_pool_parse("10.213.0.0/16", 29, &p, NULL), 0);
        assert_int_equal(netdef_pool_size(&p), 8192);
        assert_int_equal(netdef_pool_parse("10.0.0.0/8", 30, &p, NULL), 0);
        assert_int_equal(netdef_pool_size(&p), NETDEF_MAX_SUBNETS);
        pool_bad("192.0.2.0/24", 30);   /* the machine's own uplink range, not private */
        pool_bad("198.51.100.0/24", 30);
        pool_bad("10.213.0.1/16", 30);
        pool_bad("10.213.0.0/30", 30);
        pool_bad("10.213.0.0/16", 28);
        pool_bad("10.213.0.0", 30);
        pool_bad("10.213.0.0/16x", 30);
        pool_bad("8.0.0.0/7", 30);
}

static void test_seat(void **state) {
        NetPool p;
        NetSeat s;
        char buf[INET_ADDRSTRLEN];
        assert_int_equal(netdef_pool_parse("10.213.0.0/16", 30, &p, NULL), 0);
        assert_int_equal(netdef_seat(&p, "s1", 3, false, false, &s, NULL), 0);
        assert_string_equal(s.bridge, "seat-s1");
        assert_string_equal(s.network, "seatd-s1");
        assert_string_equal(inet_ntop(AF_INET, &s.subnet, buf, sizeof(buf)), "10.213.0.12");
        assert_string_equal(inet_ntop(AF_INET, &s.host, buf, sizeof(buf)), "10.213.0.13");
        assert_string_equal(inet_ntop(AF_INET, &s.guest, buf, sizeof(buf)), "10.213.0.14");
        assert_int_equal(s.prefixlen, 30);
        assert_int_equal(s.guest_mac[5], 3);

        assert_int_equal(netdef_seat(&p, "s1", 16384, false, false, &s, NULL), -ENOSPC);
        assert_int_equal(netdef_seat(&p, "S1", 0, false, false, &s, NULL), -EINVAL);
        assert_int_equal(netdef_seat(&p, "a'b", 0, false, false, &s, NULL), -EINVAL);
        assert_int_equal(netdef_seat(&p, "", 0, false, false, &s, NULL), -EINVAL);

        char br[NETDEF_IFNAME_MAX + 1];
        assert_int_equal(netdef_bridge_name("abcdefghij", br), 0);
        assert_string_equal(br, "seat-abcdefghij");
        assert_int_equal(netdef_bridge_name("abcdefghijk", br), 0);
        assert_int_equal(strlen(br), 15);
        assert_memory_equal(br, "seath", 5);
        char br2[NETDEF_IFNAME_MAX + 1];
        assert_int_equal(netdef_bridge_name("abcdefghijl", br2), 0);
        assert_string_not_equal(br, br2);
}

static void test_xml(void **state) {
        NetPool p;
        NetSeat s;
        _cleanup_free_ char *net = NULL, *iface = NULL, *net_dhcp = NULL;
        assert_int_equal(netdef_pool_parse("10.213.0.0/16", 30, &p, NULL), 0);
        assert_int_equal(netdef_seat(&p, "s1", 1, false, false, &s, NULL), 0);
        assert_int_equal(netdef_network_xml(&s, &net), 0);
        assert_string_equal(net, "<network>\n"
                                 "  <name>seatd-s1</name>\n"
                                 "  <forward mode='open'/>\n"
                                 "  <bridge name='seat-s1' stp='off' delay='0'/>\n"
                                 "  <port isolated='yes'/>\n"
                                 "  <dns enable='no'/>\n"
                                 "  <ip address='10.213.0.5' prefix='30'>\n"
                                 "  </ip>\n"
                                 "</network>\n");
        assert_null(strstr(net, "nat"));
        assert_null(strstr(net, "192.0.2."));
        assert_int_equal(netdef_interface_xml(&s, &iface), 0);
        assert_string_equal(iface, "<interface type='network'>\n"
                                   "  <source network='seatd-s1'/>\n"
                                   "  <mac address='52:54:00:d5:00:01'/>\n"
                                   "  <model type='virtio'/>\n"
                                   "</interface>\n");
        _cleanup_free_ char *down = NULL;
        assert_int_equal(netdef_interface_down_xml(&s, &down), 0);
        assert_string_equal(down, "<interface type='network'>\n"
                                  "  <source network='seatd-s1'/>\n"
                                  "  <mac address='52:54:00:d5:00:01'/>\n"
                                  "  <model type='virtio'/>\n"
                                  "  <link state='down'/>\n"
                                  "</interface>\n");
        char mac[18];
        netdef_mac_string(&s, mac);
        assert_string_equal(mac, "52:54:00:d5:00:01");
        s.dhcp = true;
        assert_int_equal(netdef_network_xml(&s, &net_dhcp), 0);
        assert_non_null(strstr(net_dhcp, "<host mac='52:54:00:d5:00:01' ip='10.213.0.6'/>"));
        assert_non_null(strstr(net_dhcp, "<range start='10.213.0.6' end='10.213.0.6'/>"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pool),
                cmocka_unit_test(test_seat),
                cmocka_unit_test(test_xml),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
