/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <netinet/in.h>

/* Minimal rtnetlink: all return 0 or -errno (the kernel's answer). */
int netlink_link_up(int ifindex);
int netlink_add_ipv4_address(int ifindex, struct in_addr addr, unsigned prefixlen);
int netlink_add_ipv4_default_route(int ifindex, struct in_addr gateway);
