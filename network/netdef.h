/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's libvirt network (docs/egress.md): its own bridge, `<forward mode='open'/>` so
 * libvirt installs no firewall rules of its own (seatd's table inet seatd is the only
 * filter), `<port isolated='yes'/>`, one small IPv4 subnet from a configured private pool,
 * no IPv6, no DNS/DHCP unless the profile serves them, and a fixed MAC and address for
 * the guest. Plus the domain's `<interface>` snippet. Pure functions, no libvirt calls.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/error.h"
#include "profile.h"

#define NETDEF_BRIDGE_PREFIX "seat-"
#define NETDEF_NETWORK_PREFIX "seatd-"
#define NETDEF_IFNAME_MAX 15
#define NETDEF_SEAT_ID_MAX 32
#define NETDEF_MAX_SUBNETS 65536u

typedef struct NetPool {
        struct in_addr base;  /* network address of the pool */
        unsigned prefixlen;   /* of the pool: 8..28 */
        unsigned subnet_len;  /* of each seat's subnet: 29 or 30 */
} NetPool;

/* "10.213.0.0/16" with /30 (or /29) per seat. The pool must lie in 10.0.0.0/8,
 * 172.16.0.0/12 or 192.168.0.0/16. */
int netdef_pool_parse(const char *s, unsigned subnet_len, NetPool *ret, SeatError **ret_error);
/* How many seats the pool holds (at most NETDEF_MAX_SUBNETS). */
unsigned netdef_pool_size(const NetPool *pool);

typedef struct NetSeat {
        char id[NETDEF_SEAT_ID_MAX + 1];
        char network[sizeof(NETDEF_NETWORK_PREFIX) + NETDEF_SEAT_ID_MAX]; /* "seatd-<id>" */
        char bridge[NETDEF_IFNAME_MAX + 1];  /* "seat-<id>", or "seath<hash>" for long ids */
        struct in_addr subnet, host, guest;  /* host = .1 (the bridge), guest = .2 */
        unsigned prefixlen;
        uint8_t guest_mac[6];                /* 52:54:00:d5:<index> */
        bool dhcp, dns;                      /* serve DHCP / DNS on the bridge */
        const EgressProfile *names;          /* borrowed: with "allow name" rules, the seat's
                                              * resolver answers only them (set it after
                                              * netdef_seat()); NULL: none */
} NetSeat;

/* The seat's network from its id and its index in the pool (the daemon allocates indexes).
 * Ids are [a-z0-9-], 1..32 bytes. */
int netdef_seat(const NetPool *pool, const char *id, unsigned index, bool dhcp, bool dns, NetSeat *ret,
                SeatError **ret_error);
/* The bridge name for a seat id ("seat-<id>" when it fits 15 bytes). */
int netdef_bridge_name(const char *id, char ret[static NETDEF_IFNAME_MAX + 1]);

/*
 * The options libvirt's dnsmasq for the seat gets when its profile allows names (docs/
 * egress.md "Names"), NULL-terminated, each without the leading "--": no resolv.conf, no
 * cache (every answer then passes through nftset), TTLs capped at NFT_NAME_MAX_TTL_S,
 * NXDOMAIN for every name not allowed, each allowed name forwarded to the seat's DNS guard
 * (which asks the profile's "dns" servers) with its addresses put into its sets, and an
 * answer holding a blocked or refused address (always-blocked, private, shared, link-local/metadata, loopback) turned into
 * NXDOMAIN. An empty list without names. strv_free() it.
 */
int netdef_dnsmasq_options(const NetSeat *s, char ***ret);

/*
 * The seat's DNS guard (network/seat-dnsguard.c), which its dnsmasq asks for every allowed
 * name: its address, 127.X.Y.Z from the low 24 bits of the host's address on the bridge
 * (one per seat, loopback only, port 53), and its arguments (--listen, one --upstream per
 * "dns" server, one --allow per distinct name), NULL-terminated; strv_free() them.
 * -EINVAL without names.
 */
void netdef_guard_address(const NetSeat *s, char ret[static INET_ADDRSTRLEN]);
int netdef_guard_argv(const NetSeat *s, char ***ret);

/* <network>…</network> for virNetworkCreateXML / virNetworkDefineXML. */
int netdef_network_xml(const NetSeat *s, char **ret);
/* <interface type='network'>…</interface> for the domain's <devices>. */
int netdef_interface_xml(const NetSeat *s, char **ret);
/* The same with <link state='down'/>: for virDomainUpdateDeviceFlags() on the running
 * domain, whose NIC then neither sends nor receives (the old machine of a reset). */
int netdef_interface_down_xml(const NetSeat *s, char **ret);
/* The guest's MAC as libvirt writes it ("52:54:00:d5:00:01"). */
void netdef_mac_string(const NetSeat *s, char ret[static 18]);
