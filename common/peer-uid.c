/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The owner of a TCP connection's other end, by sock_diag (peer-uid.h). One exact lookup
 * (no dump): the kernel finds the socket whose own address and port are the peer's and
 * whose remote ones are ours, and answers with one inet_diag_msg or an error.
 */

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/sock_diag.h>

#include "macro.h"
#include "nlmsg.h"
#include "peer-uid.h"

#define PEER_UID_TIMEOUT_MS 2000 /* the kernel answers at once; this only bounds a surprise */
#define PEER_UID_READS_MAX 4     /* datagrams read for one answer (a fresh socket gets no others) */

/* An address as 16 bytes, IPv4 as IPv4-mapped IPv6: the same connection may be described
 * as AF_INET by one side and as AF_INET6 (::ffff:a.b.c.d) by the other. */
static bool canonical(unsigned family, const uint32_t words[4], uint8_t ret[16]) {
        static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        if (family == AF_INET) {
                memcpy(ret, mapped, sizeof(mapped));
                memcpy(ret + 12, &words[0], 4);
                return true;
        }
        if (family == AF_INET6) {
                memcpy(ret, words, 16);
                return true;
        }
        return false;
}

static bool v4_mapped(const struct in6_addr *a) {
        return IN6_IS_ADDR_V4MAPPED(a);
}

/* family, port (network order) and address words (inet_diag's layout) of a socket address. */
static int split(const struct sockaddr_storage *sa, bool as_v4, uint16_t *ret_port, uint32_t ret_words[4]) {
        memset(ret_words, 0, 16);
        if (sa->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *) sa;
                *ret_port = in->sin_port;
                memcpy(&ret_words[0], &in->sin_addr, 4);
                return 0;
        }
        if (sa->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) sa;
                *ret_port = in6->sin6_port;
                if (as_v4)
                        memcpy(&ret_words[0], in6->sin6_addr.s6_addr + 12, 4);
                else
                        memcpy(ret_words, &in6->sin6_addr, 16);
                return 0;
        }
        return -EAFNOSUPPORT;
}

int peer_uid_request(const struct sockaddr_storage *local, const struct sockaddr_storage *peer, uint32_t seq,
                     PeerUidRequest *ret) {
        PeerUidRequest q = {};
        if (local->ss_family != peer->ss_family)
                return -EAFNOSUPPORT;
        bool v4 = local->ss_family == AF_INET;
        /* An IPv4 client of a dual-stack listener: its socket is AF_INET, asked as such. */
        if (local->ss_family == AF_INET6 && v4_mapped(&((const struct sockaddr_in6 *) local)->sin6_addr) &&
            v4_mapped(&((const struct sockaddr_in6 *) peer)->sin6_addr))
                v4 = true;
        /* The peer's socket: its own end (src, sport) is our peer, its remote end ours. */
        int r = split(peer, v4, &q.r.id.idiag_sport, q.r.id.idiag_src);
        if (r >= 0)
                r = split(local, v4, &q.r.id.idiag_dport, q.r.id.idiag_dst);
        if (r < 0)
                return r;
        q.h.nlmsg_len = sizeof(q);
        q.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
        q.h.nlmsg_flags = NLM_F_REQUEST; /* no NLM_F_DUMP: this one socket */
        q.h.nlmsg_seq = seq;
        q.r.sdiag_family = v4 ? AF_INET : AF_INET6;
        q.r.sdiag_protocol = IPPROTO_TCP;
        q.r.idiag_states = ~0u; /* whatever state it is in: judged on the answer */
        q.r.id.idiag_cookie[0] = q.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
        *ret = q;
        return 0;
}

/* Whether the reply's socket id is the one asked for: ports and addresses, in either
 * family's spelling. */
static bool same_socket(unsigned family, const struct inet_diag_sockid *got, const PeerUidRequest *req) {
        const struct inet_diag_sockid *want = &req->r.id;
        uint8_t a[16], b[16], c[16], d[16];
        if (got->idiag_sport != want->idiag_sport || got->idiag_dport != want->idiag_dport)
                return false;
        if (!canonical(family, got->idiag_src, a) || !canonical(req->r.sdiag_family, want->idiag_src, b) ||
            !canonical(family, got->idiag_dst, c) || !canonical(req->r.sdiag_family, want->idiag_dst, d))
                return false;
        return !memcmp(a, b, 16) && !memcmp(c, d, 16);
}

int peer_uid_parse_reply(const void *buf, size_t n, const PeerUidRequest *req, uid_t *ret_uid) {
        if (n > (size_t) SSIZE_MAX)
                return -EBADMSG;
        ssize_t left = (ssize_t) n; /* nlmsg.h */
        for (const struct nlmsghdr *h = buf; nlmsg_ok(h, left); h = nlmsg_next(h, &left)) {
                if (h->nlmsg_seq != req->h.nlmsg_seq)
                        continue;
                if (h->nlmsg_type == NLMSG_ERROR) {
                        const struct nlmsgerr *e = NLMSG_DATA(h);
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
                                return -EBADMSG;
                        /* An error names a negative errno; 0 would be an ACK, never asked for. */
                        return e->error < 0 && e->error > -4096 ? e->error : -EBADMSG;
                }
                if (h->nlmsg_type == NLMSG_DONE)
                        return -ENOENT;
                if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
                        continue;
                if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                        return -EBADMSG;
                const struct inet_diag_msg *m = NLMSG_DATA(h);
                if (!same_socket(m->idiag_family, &m->id, req))
                        return -EBADMSG;
                /* A socket no file holds any more: its uid is no process's word (the
                 * kernel says 0 for TIME_WAIT), and nothing it sent is anyone's now. */
                if (m->idiag_inode == 0)
                        return -ESRCH;
                *ret_uid = (uid_t) m->idiag_uid;
                return 0;
        }
        return -ENOMSG;
}

int peer_uid_tcp(int fd, uid_t *ret_uid) {
        static atomic_uint next_seq = 1;
        struct sockaddr_storage local, peer;
        socklen_t ll = sizeof(local), pl = sizeof(peer);
        PeerUidRequest req;
        int r;

        if (getsockname(fd, (struct sockaddr *) &local, &ll) < 0 || getpeername(fd, (struct sockaddr *) &peer, &pl) < 0)
                return -errno;
        r = peer_uid_request(&local, &peer, (uint32_t) atomic_fetch_add(&next_seq, 1), &req);
        if (r < 0)
                return r;

        _cleanup_close_ int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_SOCK_DIAG);
        if (nl < 0)
                return -errno;
        struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
        if (sendto(nl, &req, sizeof(req), 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0)
                return -errno;
        for (unsigned i = 0; i < PEER_UID_READS_MAX; i++) {
                union {
                        struct nlmsghdr h; /* (aligned for the walk) */
                        uint8_t buf[8192];
                } resp;
                struct pollfd p = { .fd = nl, .events = POLLIN };
                r = poll(&p, 1, PEER_UID_TIMEOUT_MS);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
                ssize_t n = recv(nl, &resp, sizeof(resp), MSG_TRUNC);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        return -errno;
                }
                if ((size_t) n > sizeof(resp))
                        return -EMSGSIZE;
                r = peer_uid_parse_reply(&resp, (size_t) n, &req, ret_uid);
                if (r != -ENOMSG)
                        return r;
        }
        return -ENOMSG;
}
