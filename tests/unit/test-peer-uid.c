/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* common/peer-uid: who made a loopback TCP connection (issue 35, finding 3: seatctl
 * forward carried every local user's connections with its own user's token). Real
 * connections on this host's loopback, then the reply parser on hand-built replies. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include <linux/sock_diag.h>

#include "common/macro.h"
#include "common/peer-uid.h"

#define OTHER_UID 65534u /* nobody */
#define OTHER_GID 65534u

/* A listener on addr, port 0: its fd, its address in *ret. */
static int listener(int family, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct sockaddr_storage sa = { .ss_family = (sa_family_t) family };
        socklen_t sl = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        if (family == AF_INET)
                ((struct sockaddr_in *) &sa)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else
                ((struct sockaddr_in6 *) &sa)->sin6_addr = in6addr_loopback;
        int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sl) < 0 || listen(fd, 4) < 0 || getsockname(fd, (struct sockaddr *) ret, &sl) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        *ret_len = sl;
        return fd;
}

static int dial(const struct sockaddr_storage *sa, socklen_t sl) {
        int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *) sa, sl) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static void own_connection(int family) {
        struct sockaddr_storage sa;
        socklen_t sl;
        _cleanup_close_ int l = listener(family, &sa, &sl);
        if (l == -EADDRNOTAVAIL || l == -EAFNOSUPPORT) {
                print_message("# no %s loopback here\n", family == AF_INET ? "IPv4" : "IPv6");
                skip();
        }
        assert_true(l >= 0);
        _cleanup_close_ int c = dial(&sa, sl);
        assert_true(c >= 0);
        _cleanup_close_ int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        uid_t uid = (uid_t) -1;
        assert_int_equal(peer_uid_tcp(a, &uid), 0);
        assert_int_equal(uid, geteuid());
}

TEST(own_connection_v4) {
        own_connection(AF_INET);
}

TEST(own_connection_v6) {
        own_connection(AF_INET6);
}

/* A client that closed before the lookup: its socket is the kernel's (TIME_WAIT, uid 0
 * there) or gone. Never reported as anyone's: a root forwarder would take it for its own. */
TEST(closed_peer) {
        struct sockaddr_storage sa;
        socklen_t sl;
        _cleanup_close_ int l = listener(AF_INET, &sa, &sl);
        assert_true(l >= 0);
        int c = dial(&sa, sl);
        assert_true(c >= 0);
        _cleanup_close_ int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        assert_true(a >= 0);
        assert_int_equal(send(c, "x", 1, 0), 1);
        close(c);
        usleep(50 * 1000); /* (the FIN is handled at once on loopback; this only makes it sure) */
        uid_t uid = 4242;
        int r = peer_uid_tcp(a, &uid);
        assert_true(r == -ESRCH || r == -ENOENT);
        assert_int_equal(uid, 4242); /* untouched on failure */
}

/* The child: drops to OTHER_UID, connects, waits until the parent has looked. */
static void other_user_client(const struct sockaddr_storage *sa, socklen_t sl, int done_fd) {
        if (setgroups(0, NULL) < 0 || setresgid(OTHER_GID, OTHER_GID, OTHER_GID) < 0 ||
            setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0)
                _exit(10);
        int c = dial(sa, sl);
        if (c < 0)
                _exit(11);
        char b;
        (void) !read(done_fd, &b, 1);
        _exit(0);
}

TEST(other_user) {
        if (geteuid() != 0) {
                print_message("# needs root: a child must setresuid() to another user\n");
                skip();
        }
        struct sockaddr_storage sa;
        socklen_t sl;
        int done[2];
        _cleanup_close_ int l = listener(AF_INET, &sa, &sl);
        assert_true(l >= 0);
        assert_int_equal(pipe2(done, O_CLOEXEC), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(done[1]);
                other_user_client(&sa, sl, done[0]);
        }
        close(done[0]);
        _cleanup_close_ int a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        uid_t uid = (uid_t) -1;
        int r = a >= 0 ? peer_uid_tcp(a, &uid) : -errno;
        close(done[1]);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        assert_int_equal(r, 0);
        assert_int_equal(uid, OTHER_UID);
}

/* An unprivileged lookup works: seatctl forward runs as the participant, not root. */
TEST(unprivileged_lookup) {
        if (geteuid() != 0) {
                /* (then own_connection_v4 above ran unprivileged already) */
                print_message("# needs root to become another user; own_connection_v4 ran unprivileged\n");
                skip();
        }
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(OTHER_GID, OTHER_GID, OTHER_GID) < 0 ||
                    setresuid(OTHER_UID, OTHER_UID, OTHER_UID) < 0)
                        _exit(10);
                struct sockaddr_storage sa;
                socklen_t sl;
                int l = listener(AF_INET, &sa, &sl);
                int c = l >= 0 ? dial(&sa, sl) : -1;
                int a = c >= 0 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
                uid_t uid = 0;
                if (a < 0)
                        _exit(11);
                int r = peer_uid_tcp(a, &uid);
                _exit(r < 0 ? 12 : uid == OTHER_UID ? 0 : 13);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---------------------------------------------------------------- the reply parser */

typedef union Reply {
        struct nlmsghdr h; /* (aligned) */
        uint8_t buf[512];
} Reply;

static PeerUidRequest request_v4(void) {
        struct sockaddr_storage local = { .ss_family = AF_INET }, peer = { .ss_family = AF_INET };
        struct sockaddr_in *l = (struct sockaddr_in *) &local, *p = (struct sockaddr_in *) &peer;
        l->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        l->sin_port = htons(8080);
        p->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        p->sin_port = htons(40000);
        PeerUidRequest q;
        assert_int_equal(peer_uid_request(&local, &peer, 7, &q), 0);
        return q;
}

/* One inet_diag_msg for req's socket, owned by uid (inode 1234), at off in r: its length. */
static size_t diag_msg(Reply *r, size_t off, const PeerUidRequest *req, uint32_t seq, uint32_t uid, uint32_t inode) {
        struct nlmsghdr *h = (struct nlmsghdr *) (r->buf + off);
        struct inet_diag_msg *m = NLMSG_DATA(h);
        memset(h, 0, NLMSG_SPACE(sizeof(*m)));
        h->nlmsg_len = NLMSG_LENGTH(sizeof(*m));
        h->nlmsg_type = SOCK_DIAG_BY_FAMILY;
        h->nlmsg_seq = seq;
        m->idiag_family = req->r.sdiag_family;
        m->idiag_state = 1; /* TCP_ESTABLISHED */
        m->id = req->r.id;
        m->idiag_uid = uid;
        m->idiag_inode = inode;
        return NLMSG_SPACE(sizeof(*m));
}

TEST(request) {
        PeerUidRequest q = request_v4();
        assert_int_equal(q.h.nlmsg_type, SOCK_DIAG_BY_FAMILY);
        assert_int_equal(q.h.nlmsg_flags, NLM_F_REQUEST);
        assert_int_equal(q.r.sdiag_family, AF_INET);
        assert_int_equal(q.r.sdiag_protocol, IPPROTO_TCP);
        /* the peer's socket: its own end is the peer's address */
        assert_int_equal(ntohs(q.r.id.idiag_sport), 40000);
        assert_int_equal(ntohs(q.r.id.idiag_dport), 8080);
        assert_int_equal(q.r.id.idiag_cookie[0], INET_DIAG_NOCOOKIE);

        /* an IPv4 client of a dual-stack listener: asked as IPv4 */
        struct sockaddr_storage local = { .ss_family = AF_INET6 }, peer = { .ss_family = AF_INET6 };
        assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", &((struct sockaddr_in6 *) &local)->sin6_addr), 1);
        assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.2", &((struct sockaddr_in6 *) &peer)->sin6_addr), 1);
        assert_int_equal(peer_uid_request(&local, &peer, 1, &q), 0);
        assert_int_equal(q.r.sdiag_family, AF_INET);
        assert_int_equal(q.r.id.idiag_src[0], htonl(0x7f000002));
        assert_int_equal(q.r.id.idiag_src[1], 0);

        struct sockaddr_storage unix_sa = { .ss_family = AF_UNIX };
        assert_int_equal(peer_uid_request(&unix_sa, &unix_sa, 1, &q), -EAFNOSUPPORT);
        assert_int_equal(peer_uid_request(&local, &(struct sockaddr_storage) { .ss_family = AF_INET }, 1, &q), -EAFNOSUPPORT);
}

TEST(parse_reply) {
        PeerUidRequest q = request_v4();
        Reply r;
        uid_t uid = 4242;

        size_t n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), 0);
        assert_int_equal(uid, 1000);

        /* the same socket described as IPv6 (::ffff:127.0.0.1): the same answer */
        n = diag_msg(&r, 0, &q, 7, 1001, 1234);
        struct inet_diag_msg *m = NLMSG_DATA(&r.h);
        m->idiag_family = AF_INET6;
        for (unsigned i = 0; i < 2; i++) {
                uint32_t *w = i ? m->id.idiag_dst : m->id.idiag_src;
                w[3] = w[0];
                w[0] = w[1] = 0;
                w[2] = htonl(0xffff);
        }
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), 0);
        assert_int_equal(uid, 1001);

        /* another sequence number first, then ours */
        n = diag_msg(&r, 0, &q, 6, 0, 1);
        n += diag_msg(&r, n, &q, 7, 1002, 1234);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), 0);
        assert_int_equal(uid, 1002);

        uid = 4242;
        n = diag_msg(&r, 0, &q, 6, 1000, 1234);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -ENOMSG); /* not ours */
        n = diag_msg(&r, 0, &q, 7, 0, 0);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -ESRCH); /* TIME_WAIT: "uid 0", no inode */
        n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        m = NLMSG_DATA(&r.h);
        m->id.idiag_sport = htons(40001);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -EBADMSG); /* another socket */
        n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        m->id.idiag_src[0] = htonl(0x7f000009);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -EBADMSG);
        n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        m->idiag_family = AF_UNIX;
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -EBADMSG);
        n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        r.h.nlmsg_len = NLMSG_LENGTH(sizeof(*m) - 4);
        assert_int_equal(peer_uid_parse_reply(&r, n, &q, &uid), -EBADMSG); /* too short for its message */
        n = diag_msg(&r, 0, &q, 7, 1000, 1234);
        assert_int_equal(peer_uid_parse_reply(&r, n - 4, &q, &uid), -ENOMSG); /* cut: never read past n */
        assert_int_equal(peer_uid_parse_reply(&r, 0, &q, &uid), -ENOMSG);
        assert_int_equal(uid, 4242);

        /* the kernel's error */
        memset(&r, 0, sizeof(r));
        r.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct nlmsgerr));
        r.h.nlmsg_type = NLMSG_ERROR;
        r.h.nlmsg_seq = 7;
        struct nlmsgerr *e = NLMSG_DATA(&r.h);
        e->error = -ENOENT;
        assert_int_equal(peer_uid_parse_reply(&r, r.h.nlmsg_len, &q, &uid), -ENOENT);
        e->error = 0; /* an ACK answers nothing here */
        assert_int_equal(peer_uid_parse_reply(&r, r.h.nlmsg_len, &q, &uid), -EBADMSG);
        e->error = 5;
        assert_int_equal(peer_uid_parse_reply(&r, r.h.nlmsg_len, &q, &uid), -EBADMSG);
        r.h.nlmsg_len = NLMSG_LENGTH(2);
        assert_int_equal(peer_uid_parse_reply(&r, r.h.nlmsg_len, &q, &uid), -EBADMSG);
        assert_int_equal(uid, 4242);
}

TEST_MAIN("peer-uid")
