/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One ctnetlink dump message (issue 13 #6): the first 4 bytes are the address looked for,
 * the rest the message. Never reads outside it; a match keeps a whole attribute that fits
 * the delete request. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netlink.h>

#include "network/conntrack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct in_addr addr;
        ConntrackEntry e;

        if (size < sizeof(addr) || size > 65536)
                return 0;
        memcpy(&addr, data, sizeof(addr));
        size -= sizeof(addr);
        /* netlink messages are 4-byte aligned in the receive buffer */
        uint32_t *msg = malloc(size ? (size + 3) & ~(size_t) 3 : 4);
        if (!msg)
                return 0;
        memcpy(msg, data + sizeof(addr), size);
        int r = conntrack_entry_match(msg, size, addr, &e);
        if (r != 0 && r != 1 && r != -EBADMSG)
                abort();
        if (r == 1) {
                const struct nlattr *a = (const struct nlattr *) e.tuple;
                if (e.tuple_len < NLA_HDRLEN || e.tuple_len > CONNTRACK_TUPLE_MAX || a->nla_len != e.tuple_len)
                        abort();
        }
        free(msg);
        return 0;
}
