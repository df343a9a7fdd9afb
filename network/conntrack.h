/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Forgetting a guest address's connections (issue #13, finding 6). A seat's next machine
 * has the same MAC and address as the last one, and its filter accepts replies
 * (`ct state established`) towards that address: a conntrack entry that the old guest made
 * would carry a flow it opened on into its successor. seatd removes every entry that names
 * the address before another machine takes it (reset, provision, release).
 *
 * Plain ctnetlink on a short-lived socket (no library): one dump of the IPv4 table,
 * filtered here, then one delete per matching entry, by its original tuple and zone.
 * Every receive has a timeout; every attribute is bounds-checked.
 */

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CONNTRACK_TUPLE_MAX 128 /* bytes of a CTA_TUPLE_ORIG attribute kept for its delete */

/* What a delete needs of one entry: its original tuple (the attribute as the kernel sent
 * it, header included) and its zone. */
typedef struct ConntrackEntry {
        uint8_t tuple[CONNTRACK_TUPLE_MAX];
        size_t tuple_len;
        bool has_zone;
        uint16_t zone; /* network byte order, as it goes back to the kernel */
} ConntrackEntry;

/*
 * One message of a conntrack dump (from its nlmsghdr on, len bytes): 1 and *ret filled
 * when it is an IPv4 entry with addr as the source or destination of its original or its
 * reply tuple, 0 when it is another entry, -EBADMSG when it is malformed. Pure: no socket,
 * so it can be tested and fuzzed on a buffer.
 */
int conntrack_entry_match(const void *msg, size_t len, struct in_addr addr, ConntrackEntry *ret);

/*
 * Remove every IPv4 conntrack entry (all zones) whose original or reply tuple has addr as
 * source or destination. Returns the number removed (entries that went away meanwhile are
 * not counted), or -errno (-EPROTONOSUPPORT: no ctnetlink in this kernel).
 */
int conntrack_flush_ipv4(struct in_addr addr);
