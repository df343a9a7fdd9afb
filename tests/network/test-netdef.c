/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>

#include "../lib/seat-test.h"

#include "network/netdef.h"

static void pool_bad(const char *s, unsigned sub) {
        _cleanup_error_ SeatError *e = NULL;
        NetPool p;
        assert_int_equal(netdef_pool_parse(s, sub, &p, &e), -EINVAL);
        assert_non_null(e);
}

TEST(pool) {
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

TEST(seat) {
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

TEST(xml) {
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
                                   "  <driver event_idx='off'/>\n"
                                   "</interface>\n");
        _cleanup_free_ char *down = NULL;
        assert_int_equal(netdef_interface_down_xml(&s, &down), 0);
        assert_string_equal(down, "<interface type='network'>\n"
                                  "  <source network='seatd-s1'/>\n"
                                  "  <mac address='52:54:00:d5:00:01'/>\n"
                                  "  <model type='virtio'/>\n"
                                  "  <driver event_idx='off'/>\n"
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

/* "allow name": libvirt's dnsmasq for the seat answers only the names, forwards them to
 * the seat's DNS guard (which asks the profile's servers), fills the names' sets, and refuses rebinding answers. */
TEST(names_xml) {
        NetPool p;
        NetSeat s;
        EgressProfile *prof = NULL;
        _cleanup_free_ char *net = NULL;
        _cleanup_strv_free_ char **opts = NULL, **none = NULL;
        const char *text = "ipv6 allow\ndns 198.51.100.53\ndns 2001:db8::53\n"
                           "allow name example.test tcp port 443\nallow name *.wild.test udp port 53\n"
                           "allow name example.test tcp port 80\n";
        assert_int_equal(egress_profile_parse(text, strlen(text), &prof, NULL), 0);
        assert_int_equal(netdef_pool_parse("10.213.0.0/16", 30, &p, NULL), 0);
        assert_int_equal(netdef_seat(&p, "s1", 1, false, false, &s, NULL), 0);
        assert_int_equal(netdef_dnsmasq_options(&s, &none), 0); /* no names: nothing */
        assert_null(none[0]);
        s.names = prof;
        assert_int_equal(netdef_dnsmasq_options(&s, &opts), 0);
        const char *want[] = {
                "no-resolv", "cache-size=0", "max-ttl=10", "address=/#/",
                "bogus-nxdomain=0.0.0.0/8", "bogus-nxdomain=127.0.0.0/8", "bogus-nxdomain=169.254.0.0/16",
                "bogus-nxdomain=224.0.0.0/4", "bogus-nxdomain=255.255.255.255", "bogus-nxdomain=10.0.0.0/8",
                "bogus-nxdomain=100.64.0.0/10", "bogus-nxdomain=172.16.0.0/12", "bogus-nxdomain=192.168.0.0/16",
                "bogus-nxdomain=::1", "bogus-nxdomain=fe80::/10", "bogus-nxdomain=ff00::/8", "bogus-nxdomain=::",
                "bogus-nxdomain=::ffff:0.0.0.0/96", "bogus-nxdomain=64:ff9b::/96", "bogus-nxdomain=64:ff9b:1::/48",
                "bogus-nxdomain=fc00::/7", "bogus-nxdomain=fec0::/10",
                "server=/example.test/127.213.0.5",
                "nftset=/example.test/4#inet#seatd#n40-seat-s1,6#inet#seatd#n60-seat-s1",
                "server=/*.wild.test/127.213.0.5",
                "nftset=/wild.test/4#inet#seatd#n41-seat-s1,6#inet#seatd#n61-seat-s1", NULL,
        };
        for (size_t i = 0; want[i] || opts[i]; i++) {
                assert_non_null(opts[i]);
                assert_non_null(want[i]);
                assert_string_equal(opts[i], want[i]);
        }
        /* the guard asks the profile's servers, for the distinct names */
        _cleanup_strv_free_ char **argv = NULL;
        assert_int_equal(netdef_guard_argv(&s, &argv), 0);
        const char *want_argv[] = {
                "--listen", "127.213.0.5", "--upstream", "198.51.100.53", "--upstream", "[2001:db8::53]",
                "--allow", "example.test", "--allow", "*.wild.test", NULL,
        };
        for (size_t i = 0; want_argv[i] || argv[i]; i++) {
                assert_non_null(argv[i]);
                assert_non_null(want_argv[i]);
                assert_string_equal(argv[i], want_argv[i]);
        }
        assert_int_equal(netdef_network_xml(&s, &net), 0);
        assert_non_null(strstr(net, "<network xmlns:dnsmasq='http://libvirt.org/schemas/network/dnsmasq/1.0'>\n"));
        assert_non_null(strstr(net, "  <dns enable='yes'/>\n"));
        assert_non_null(strstr(net, "  </ip>\n"
                                    "  <dnsmasq:options>\n"
                                    "    <dnsmasq:option value='no-resolv'/>\n"
                                    "    <dnsmasq:option value='cache-size=0'/>\n"));
        assert_non_null(strstr(net, "    <dnsmasq:option value='nftset=/wild.test/4#inet#seatd#n41-seat-s1,6#inet#seatd#n61-seat-s1'/>\n"
                                    "  </dnsmasq:options>\n"
                                    "</network>\n"));
        egress_profile_free(prof);
}

TEST_MAIN("netdef")
