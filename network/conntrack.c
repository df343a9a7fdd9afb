/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* glibc's <netinet/in.h> (through conntrack.h) before the kernel headers that include
 * <linux/in.h>. */
#include "conntrack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netlink.h>

#include "common/macro.h"
#include "nlattr.h"

#define RECV_TIMEOUT_S 2
#define RECV_BUF_SIZE (64 * 1024)
/* Entries collected by one dump; more are removed by another pass. */
#define BATCH_MAX 4096
/* Passes: a dump the kernel marks interrupted, or a full batch, starts another. */
#define PASSES_MAX 8

/* ---- attributes ---- */

/* The first attribute of type `type` in [buf, buf+len), or NULL; -EBADMSG through *bad
 * when an attribute's length does not fit. */
static const struct nlattr *attr_find(const uint8_t *buf, size_t len, uint16_t type, bool *bad) {
        const struct nlattr *a;
        size_t off = 0;
        int r;
        while ((r = nlattr_next(buf, len, &off, &a)) > 0)
                if (nlattr_type(a) == type)
                        return a;
        if (r < 0)
                *bad = true;
        return NULL;
}


/* A tuple's IPv4 source and destination: 1 when either is addr, 0 when neither (or the
 * tuple is not IPv4), -EBADMSG. */
static int tuple_names(const struct nlattr *tuple, struct in_addr addr) {
        bool bad = false;
        const struct nlattr *ip = attr_find(nlattr_data(tuple), nlattr_len(tuple), CTA_TUPLE_IP, &bad);
        if (bad)
                return -EBADMSG;
        if (!ip)
                return 0;
        for (uint16_t t = CTA_IP_V4_SRC; t <= CTA_IP_V4_DST; t++) {
                const struct nlattr *a = attr_find(nlattr_data(ip), nlattr_len(ip), t, &bad);
                if (bad)
                        return -EBADMSG;
                if (!a)
                        continue;
                if (nlattr_len(a) != sizeof(struct in_addr))
                        return -EBADMSG;
                if (memcmp(nlattr_data(a), &addr, sizeof(addr)) == 0)
                        return 1;
        }
        return 0;
}

int conntrack_entry_match(const void *msg, size_t len, struct in_addr addr, ConntrackEntry *ret) {
        const struct nlmsghdr *h = msg;
        if (len < NLMSG_HDRLEN || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg)) || h->nlmsg_len > len)
                return -EBADMSG;
        if (NFNL_SUBSYS_ID(h->nlmsg_type) != NFNL_SUBSYS_CTNETLINK)
                return 0;
        const struct nfgenmsg *g = NLMSG_DATA(h);
        if (g->nfgen_family != AF_INET)
                return 0;
        const uint8_t *attrs = (const uint8_t *) NLMSG_DATA(h) + NLMSG_ALIGN(sizeof(*g));
        size_t n = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*g)));

        bool bad = false;
        const struct nlattr *orig = attr_find(attrs, n, CTA_TUPLE_ORIG, &bad);
        const struct nlattr *reply = bad ? NULL : attr_find(attrs, n, CTA_TUPLE_REPLY, &bad);
        const struct nlattr *zone = bad ? NULL : attr_find(attrs, n, CTA_ZONE, &bad);
        if (bad || !orig)
                return -EBADMSG;
        int r = tuple_names(orig, addr);
        if (r == 0 && reply)
                r = tuple_names(reply, addr);
        if (r <= 0)
                return r;
        /* The delete names the entry by this attribute, sent back as it came. */
        if (orig->nla_len > sizeof(ret->tuple) || (zone && nlattr_len(zone) != sizeof(uint16_t)))
                return -EBADMSG;
        *ret = (ConntrackEntry) { .tuple_len = orig->nla_len, .has_zone = zone != NULL };
        memcpy(ret->tuple, orig, orig->nla_len);
        if (zone)
                memcpy(&ret->zone, nlattr_data(zone), sizeof(ret->zone));
        return 1;
}

/* ---- the socket ---- */

typedef struct Request {
        struct nlmsghdr h;
        struct nfgenmsg g;
        uint8_t attrs[CONNTRACK_TUPLE_MAX + NLA_HDRLEN + 8];
} Request;

static void request_init(Request *req, uint16_t msg, uint16_t flags, uint32_t seq) {
        *req = (Request) {
                .h = { .nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg)),
                       .nlmsg_type = (uint16_t) ((NFNL_SUBSYS_CTNETLINK << 8) | msg),
                       .nlmsg_flags = (uint16_t) (NLM_F_REQUEST | flags),
                       .nlmsg_seq = seq },
                .g = { .nfgen_family = AF_INET, .version = NFNETLINK_V0 },
        };
}

static void request_add(Request *req, const void *data, size_t len) {
        memcpy((uint8_t *) req + NLMSG_ALIGN(req->h.nlmsg_len), data, len);
        req->h.nlmsg_len = NLMSG_ALIGN(req->h.nlmsg_len) + (uint32_t) NLA_ALIGN(len);
}

static int send_request(int fd, const Request *req) {
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        return sendto(fd, req, req->h.nlmsg_len, 0, (const struct sockaddr *) &kernel, sizeof(kernel)) < 0 ? -errno : 0;
}

static ssize_t recv_some(int fd, void *buf, size_t size) {
        for (;;) {
                ssize_t n = recv(fd, buf, size, MSG_TRUNC);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
                if ((size_t) n > size)
                        return -EMSGSIZE;
                return n;
        }
}

/* The kernel's answer to one request (ACK or error), skipping anything else. */
static int wait_ack(int fd, uint8_t *buf, uint32_t seq) {
        for (;;) {
                ssize_t n = recv_some(fd, buf, RECV_BUF_SIZE);
                if (n < 0)
                        return (int) n;
                int err, k = nlmsg_find_ack(buf, (size_t) n, seq, &err);
                if (k != 0)
                        return k < 0 ? k : err;
        }
}

/* One dump: the matching entries into batch (at most BATCH_MAX; *ret_more when there were
 * more, or the kernel says the dump was interrupted by a change to the table). */
static int dump_matching(int fd, uint8_t *buf, uint32_t seq, struct in_addr addr, ConntrackEntry *batch,
                         size_t *ret_n, bool *ret_more) {
        Request req;
        size_t count = 0;
        bool more = false;

        request_init(&req, IPCTNL_MSG_CT_GET, NLM_F_DUMP, seq);
        int r = send_request(fd, &req);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t n = recv_some(fd, buf, RECV_BUF_SIZE);
                if (n < 0)
                        return (int) n;
                ssize_t left = n; /* common/nlmsg.h */
                for (const struct nlmsghdr *h = (const struct nlmsghdr *) buf; nlmsg_ok(h, left); h = nlmsg_next(h, &left)) {
                        if (h->nlmsg_seq != seq)
                                continue;
                        if (h->nlmsg_flags & NLM_F_DUMP_INTR)
                                more = true;
                        if (h->nlmsg_type == NLMSG_DONE) {
                                *ret_n = count;
                                *ret_more = more;
                                return 0;
                        }
                        if (h->nlmsg_type == NLMSG_ERROR) {
                                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                        return -EBADMSG;
                                int e = ((const struct nlmsgerr *) NLMSG_DATA(h))->error;
                                return e < 0 ? e : -EBADMSG;
                        }
                        ConntrackEntry e;
                        r = conntrack_entry_match(h, h->nlmsg_len, addr, &e);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                        if (count < BATCH_MAX)
                                batch[count++] = e;
                        else
                                more = true; /* read on to NLMSG_DONE; the next pass takes them */
                }
        }
}

static int delete_entry(int fd, uint8_t *buf, uint32_t seq, const ConntrackEntry *e) {
        Request req;
        request_init(&req, IPCTNL_MSG_CT_DELETE, NLM_F_ACK, seq);
        request_add(&req, e->tuple, e->tuple_len);
        if (e->has_zone) {
                struct {
                        struct nlattr a;
                        uint16_t zone;
                } z = { .a = { .nla_len = NLA_HDRLEN + sizeof(uint16_t), .nla_type = CTA_ZONE }, .zone = e->zone };
                request_add(&req, &z, NLA_HDRLEN + sizeof(uint16_t));
        }
        int r = send_request(fd, &req);
        return r < 0 ? r : wait_ack(fd, buf, seq);
}

int conntrack_flush_ipv4(struct in_addr addr) {
        _cleanup_close_ int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
        struct timeval tv = { .tv_sec = RECV_TIMEOUT_S };
        uint32_t seq = 0;
        int removed = 0;

        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        _cleanup_free_ uint8_t *buf = malloc(RECV_BUF_SIZE);
        _cleanup_free_ ConntrackEntry *batch = calloc(BATCH_MAX, sizeof(*batch));
        if (!buf || !batch)
                return -ENOMEM;

        for (int pass = 0; pass < PASSES_MAX; pass++) {
                size_t n = 0;
                bool more = false;
                int r = dump_matching(fd, buf, ++seq, addr, batch, &n, &more);
                if (r < 0)
                        /* No ctnetlink (module missing): the kernel says EOPNOTSUPP. */
                        return r == -EOPNOTSUPP ? -EPROTONOSUPPORT : r;
                for (size_t i = 0; i < n; i++) {
                        r = delete_entry(fd, buf, ++seq, &batch[i]);
                        if (r == -ENOENT) /* timed out or removed meanwhile */
                                continue;
                        if (r < 0)
                                return r;
                        removed++;
                }
                if (!more)
                        return removed;
        }
        /* Entries for the address keep coming back faster than they are removed. */
        return -EAGAIN;
}
