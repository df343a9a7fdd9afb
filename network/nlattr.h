/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Netlink attributes as the kernel lays them out, read without a library (conntrack.c,
 * nflog.c). Every length comes from the kernel's message and is checked before use. */

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <limits.h>
#include <linux/netlink.h>

#include "common/nlmsg.h"

/* The attribute at *off in [buf, buf+len), and *off moved past it: 1 with *ret, 0 at the
 * end, -EBADMSG for one whose length does not fit. */
static inline int nlattr_next(const uint8_t *buf, size_t len, size_t *off, const struct nlattr **ret) {
        if (*off + NLA_HDRLEN > len)
                return 0;
        const struct nlattr *a = (const struct nlattr *) (buf + *off);
        if (a->nla_len < NLA_HDRLEN || a->nla_len > len - *off)
                return -EBADMSG;
        *off += NLA_ALIGN(a->nla_len);
        *ret = a;
        return 1;
}

static inline uint16_t nlattr_type(const struct nlattr *a) {
        return a->nla_type & NLA_TYPE_MASK;
}

static inline const uint8_t *nlattr_data(const struct nlattr *a) {
        return (const uint8_t *) a + NLA_HDRLEN;
}

static inline size_t nlattr_len(const struct nlattr *a) {
        return a->nla_len - NLA_HDRLEN;
}

/* The kernel's answer to request seq among the n bytes of messages in buf: 1 with its
 * error (0 for an ACK) in *ret, 0 when none of them is it, -EBADMSG for a truncated one. */
static inline int nlmsg_find_ack(const void *buf, size_t n, uint32_t seq, int *ret) {
        ssize_t left = n > (size_t) SSIZE_MAX ? SSIZE_MAX : (ssize_t) n; /* common/nlmsg.h */
        for (const struct nlmsghdr *h = buf; nlmsg_ok(h, left); h = nlmsg_next(h, &left)) {
                if (h->nlmsg_seq != seq || h->nlmsg_type != NLMSG_ERROR)
                        continue;
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                        return -EBADMSG;
                *ret = ((const struct nlmsgerr *) NLMSG_DATA(h))->error;
                return 1;
        }
        return 0;
}
