/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Walking the messages of one netlink datagram, for every reader of netlink here.
 * NLMSG_OK() and NLMSG_NEXT() take the count left in the caller's type: a size_t wraps
 * past a last message whose length is not a multiple of 4 (NLMSG_NEXT() subtracts its
 * aligned length) and the walk read on past the datagram; an int makes NLMSG_OK() compare
 * it with the unsigned nlmsg_len (clang's -Wsign-compare). These keep the count signed and
 * compare like with like:
 *
 *         ssize_t left = n;
 *         for (const struct nlmsghdr *h = buf; nlmsg_ok(h, left); h = nlmsg_next(h, &left))
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/netlink.h>

static inline bool nlmsg_ok(const struct nlmsghdr *h, ssize_t left) {
        return left >= (ssize_t) sizeof(struct nlmsghdr) && h->nlmsg_len >= sizeof(struct nlmsghdr) &&
               (ssize_t) h->nlmsg_len <= left;
}

static inline const struct nlmsghdr *nlmsg_next(const struct nlmsghdr *h, ssize_t *left) {
        size_t step = NLMSG_ALIGN(h->nlmsg_len);
        *left -= (ssize_t) step;
        return (const struct nlmsghdr *) ((const char *) h + step);
}
