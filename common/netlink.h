/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

/* Minimal rtnetlink: all return 0 or -errno (the kernel's answer). */
int netlink_link_up(int ifindex);
int netlink_link_down(int ifindex);
int netlink_add_ipv4_address(int ifindex, struct in_addr addr, unsigned prefixlen);
int netlink_add_ipv4_default_route(int ifindex, struct in_addr gateway);

/* Policy routing for the host (seatd): "ip rule add iif IIF lookup TABLE priority PRIO"
 * (add) or the same rule's removal (absent already: 0). */
int netlink_ipv4_rule(bool add, const char *iifname, uint32_t table, uint32_t priority);

/* A default route in TABLE: via gateway (or on-link when gateway is NULL) out of ifindex,
 * or, with blackhole, a blackhole default (ifindex and gateway unused). metric orders two
 * defaults in one table. add: create or replace; !add: delete (absent already: 0). */
int netlink_ipv4_table_default(bool add, uint32_t table, bool blackhole, int ifindex, const struct in_addr *gateway,
                               uint32_t metric);
