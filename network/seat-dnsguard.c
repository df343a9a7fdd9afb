/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-dnsguard: the upstream of one seat's dnsmasq for its allowed names (docs/egress.md
 * "The DNS guard"). dnsmasq forwards an allowed name's query here (its server= line),
 * this forwards it to the profile's real resolvers (UDP, or TCP when it came over TCP)
 * and hands back only what network/dnsguard-parse.c passes: dnsmasq then adds the
 * addresses of an answer whose CNAME chain stayed inside the seat's names.
 *
 * A process of its own, started by seatd per seat: it parses what the network sends, so
 * it runs as an unprivileged user (it binds its port as root, then drops everything), and
 * a crash or a flood in one seat's guard touches no other seat and not seatd. It exits
 * when seatd goes (--lifeline-fd hangs up); the seat's lookups then fail until a new
 * seatd adopts the seat and starts a new guard.
 *
 * Bounded: DNSG_PENDING queries in flight (more get SERVFAIL at once), DNSG_TCP_CLIENTS
 * TCP connections from dnsmasq, each read or upstream attempt --timeout-ms, fixed buffers
 * (no allocation after start), at most LOG_PER_S log lines a second.
 *
 * usage: seat-dnsguard --listen ADDR[:PORT] --upstream ADDR [--upstream ADDR]...
 *                      --allow NAME... [--user USER] [--lifeline-fd FD] [--ready-fd FD]
 *                      [--timeout-ms MS]
 * --ready-fd: "1" is written to it (and it is closed) once the port is bound and the
 * privileges are gone, so seatd knows the seat's lookups will be answered.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/macro.h"
#include "common/sockaddr.h"
#include "dnsguard-parse.h"

#define DNSG_PENDING 64
#define DNSG_TCP_CLIENTS 16
#define DNSG_UPSTREAMS 4
#define DNSG_ALLOW_MAX 1024
#define LOG_PER_S 20

typedef struct Upstream {
        struct sockaddr_storage sa;
        socklen_t len;
} Upstream;

typedef enum TcpState { TCP_FREE, TCP_READING, TCP_WAITING } TcpState;

/* A TCP connection from dnsmasq: one query at a time. */
typedef struct TcpClient {
        TcpState state;
        int fd;
        uint8_t buf[2 + DNSG_QUERY_MAX];
        size_t have;
        int64_t deadline;
} TcpClient;

typedef enum SlotState { SLOT_FREE, SLOT_CONNECTING, SLOT_WAITING } SlotState;

/* One query in flight to an upstream. */
typedef struct Slot {
        SlotState state;
        int fd;              /* to the upstream: a connected UDP socket, or TCP */
        bool tcp;
        unsigned attempt;    /* which upstream (attempt % n_upstreams) */
        int64_t deadline;
        uint16_t upstream_id;
        DnsgQuery q;
        uint8_t query[DNSG_QUERY_MAX];
        size_t query_len;
        struct sockaddr_storage client; /* UDP asker */
        socklen_t client_len;
        TcpClient *tcp_client;          /* TCP asker */
        uint8_t answer[2 + DNSG_MSG_MAX];
        size_t have;
} Slot;

typedef struct Guard {
        int udp, tcp, lifeline;
        Upstream up[DNSG_UPSTREAMS];
        size_t n_up;
        const char *allow[DNSG_ALLOW_MAX];
        DnsgPolicy policy;
        int timeout_ms;
        Slot slots[DNSG_PENDING];
        TcpClient clients[DNSG_TCP_CLIENTS];
        int64_t log_second;
        unsigned log_lines, log_suppressed;
} Guard;

static int64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Names in messages went through dnsg_read_name ([a-z0-9_.-]): safe to print as they are. */
_printf_(2, 3) static void glog(Guard *g, const char *fmt, ...) {
        int64_t s = now_ms() / 1000;
        if (s != g->log_second) {
                if (g->log_suppressed)
                        fprintf(stderr, "seat-dnsguard: %u log lines suppressed\n", g->log_suppressed);
                g->log_second = s;
                g->log_lines = g->log_suppressed = 0;
        }
        if (++g->log_lines > LOG_PER_S) {
                g->log_suppressed++;
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        fputs("seat-dnsguard: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static int parse_addr(const char *s, uint16_t default_port, struct sockaddr_storage *ret, socklen_t *ret_len) {
        char host[INET6_ADDRSTRLEN + 1];
        unsigned port = default_port;
        const char *colon = strrchr(s, ':');

        /* IPv4 "A:P", IPv6 "[A]:P" or a bare address of either family */
        if (s[0] == '[') {
                const char *close = strchr(s, ']');
                if (!close || (size_t) (close - s - 1) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, (size_t) (close - s - 1));
                host[close - s - 1] = 0;
                if (close[1] == ':')
                        port = (unsigned) atoi(close + 2);
        } else if (colon && strchr(s, ':') == colon) {
                if ((size_t) (colon - s) >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s, (size_t) (colon - s));
                host[colon - s] = 0;
                port = (unsigned) atoi(colon + 1);
        } else if (strlen(s) < sizeof(host))
                strcpy(host, s);
        else
                return -EINVAL;
        if (port == 0 || port > 65535)
                return -EINVAL;
        return sockaddr_from_ip(host, (uint16_t) port, ret, ret_len);
}

/* ---- setup ---- */

/* A seatd restarted beside a guard that has not seen the hang-up yet: wait a little. */
static int bind_retry(int fd, const struct sockaddr *sa, socklen_t len) {
        for (int i = 0; i < 40; i++) {
                if (bind(fd, sa, len) == 0)
                        return 0;
                if (errno != EADDRINUSE)
                        return -errno;
                usleep(50 * 1000);
        }
        return -EADDRINUSE;
}

static int listen_on(Guard *g, const char *spec) {
        struct sockaddr_storage sa;
        socklen_t len;
        int one = 1, r;

        if (parse_addr(spec, 53, &sa, &len) < 0)
                return -EINVAL;
        g->udp = socket(sa.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        g->tcp = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (g->udp < 0 || g->tcp < 0)
                return -errno;
        (void) setsockopt(g->tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if ((r = bind_retry(g->udp, (struct sockaddr *) &sa, len)) < 0 ||
            (r = bind_retry(g->tcp, (struct sockaddr *) &sa, len)) < 0)
                return r;
        return listen(g->tcp, 16) < 0 ? -errno : 0;
}

/* Root only to bind the port; then the user's ids, no groups, no capabilities, and
 * nothing that could give them back. */
static int drop_privileges(const char *user) {
        if (geteuid() != 0)
                return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
        struct passwd *pw = getpwnam(user);
        if (!pw || pw->pw_uid == 0)
                return -ESRCH;
        if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
                return -errno;
        if (setuid(0) == 0 || geteuid() == 0)
                return -EPERM;
        return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

/* ---- answering ---- */

static void reply(Guard *g, Slot *s, const uint8_t *msg, size_t len) {
        if (s->tcp_client) {
                TcpClient *c = s->tcp_client;
                uint8_t buf[2 + DNSG_MSG_MAX];
                buf[0] = (uint8_t) (len >> 8);
                buf[1] = (uint8_t) len;
                memcpy(buf + 2, msg, len);
                /* Answers are small against a loopback socket's buffer; one that does not
                 * fit at once closes the connection (dnsmasq asks again) rather than wait. */
                if (send(c->fd, buf, len + 2, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t) (len + 2)) {
                        close(c->fd);
                        c->state = TCP_FREE;
                } else {
                        c->state = TCP_READING;
                        c->have = 0;
                        c->deadline = now_ms() + 10 * g->timeout_ms;
                }
                return;
        }
        uint8_t tc[DNSG_QUERY_MAX];
        if (len > s->q.udp_size) /* more than the asker takes: it asks again over TCP */
                msg = tc, len = dnsg_error_reply(&s->q, s->query, DNSG_RCODE_NOERROR, true, tc);
        (void) sendto(g->udp, msg, len, MSG_DONTWAIT, (struct sockaddr *) &s->client, s->client_len);
}

static void slot_close(Slot *s) {
        if (s->fd >= 0)
                close(s->fd);
        s->fd = -1;
        s->state = SLOT_FREE;
}

static void answer_error(Guard *g, Slot *s, uint8_t rcode, bool truncated) {
        uint8_t out[DNSG_QUERY_MAX];
        size_t len = dnsg_error_reply(&s->q, s->query, rcode, truncated, out);
        reply(g, s, out, len);
        slot_close(s);
}

/* The upstream's answer, judged. */
static void finish(Guard *g, Slot *s, const uint8_t *m, size_t n) {
        static uint8_t out[DNSG_MSG_MAX];
        size_t len = 0;
        uint8_t rcode = DNSG_RCODE_SERVFAIL;
        const char *why = NULL;
        DnsgVerdict v = dnsg_check_answer(&g->policy, &s->q, s->upstream_id, m, n, out, &len, &rcode, &why);

        switch (v) {
        case DNSG_PASS:
                reply(g, s, out, len);
                slot_close(s);
                return;
        case DNSG_TRUNCATED:
                answer_error(g, s, DNSG_RCODE_NOERROR, true);
                return;
        case DNSG_RCODE:
                answer_error(g, s, rcode, false);
                return;
        case DNSG_NXDOMAIN:
                glog(g, "NXDOMAIN for '%s' (type %u): %s", s->q.name, s->q.qtype, why);
                answer_error(g, s, DNSG_RCODE_NXDOMAIN, false);
                return;
        case DNSG_SERVFAIL:
                glog(g, "SERVFAIL for '%s' (type %u): %s (%zu bytes)", s->q.name, s->q.qtype, why, n);
                answer_error(g, s, DNSG_RCODE_SERVFAIL, false);
                return;
        }
}

/* Sends the query to the upstream of this attempt, with an id of our own. */
static int slot_send(Guard *g, Slot *s) {
        const Upstream *u = &g->up[s->attempt % g->n_up];
        if (s->fd >= 0)
                close(s->fd);
        s->have = 0;
        if (getrandom(&s->upstream_id, sizeof(s->upstream_id), 0) != sizeof(s->upstream_id))
                return -EIO;
        s->query[0] = (uint8_t) (s->upstream_id >> 8);
        s->query[1] = (uint8_t) s->upstream_id;
        s->fd = socket(u->sa.ss_family, (s->tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->fd < 0)
                return -errno;
        s->deadline = now_ms() + g->timeout_ms;
        /* connected: a fresh random port, and the kernel drops datagrams from anyone else */
        if (connect(s->fd, (const struct sockaddr *) &u->sa, u->len) < 0) {
                if (!s->tcp || errno != EINPROGRESS)
                        return -errno;
                s->state = SLOT_CONNECTING;
                return 0;
        }
        s->state = SLOT_WAITING;
        if (s->tcp) {
                s->state = SLOT_CONNECTING; /* sent below, on POLLOUT */
                return 0;
        }
        return send(s->fd, s->query, s->query_len, 0) == (ssize_t) s->query_len ? 0 : -EIO;
}

static void slot_next_attempt(Guard *g, Slot *s) {
        /* each upstream left in turn: one that cannot even be sent to (no route) is not
         * the end of the query */
        while (++s->attempt < g->n_up)
                if (slot_send(g, s) >= 0)
                        return;
        glog(g, "SERVFAIL for '%s': no upstream answered", s->q.name);
        answer_error(g, s, DNSG_RCODE_SERVFAIL, false);
}

/* A query from dnsmasq (m, n), to be answered by UDP to client or on the TCP connection. */
static void take_query(Guard *g, const uint8_t *m, size_t n, const struct sockaddr_storage *client,
                       socklen_t client_len, TcpClient *tc) {
        DnsgQuery q;
        if (dnsg_parse_query(m, n, &q) < 0)
                return; /* nothing to answer to: dnsmasq sends no such thing */
        Slot *s = NULL;
        for (size_t i = 0; i < DNSG_PENDING && !s; i++)
                if (g->slots[i].state == SLOT_FREE)
                        s = &g->slots[i];
        Slot overflow = { .fd = -1 };
        bool full = !s;
        if (full)
                s = &overflow;
        *s = (Slot) { .fd = -1, .q = q, .query_len = n, .tcp = tc != NULL, .tcp_client = tc };
        memcpy(s->query, m, n);
        if (client) {
                memcpy(&s->client, client, client_len);
                s->client_len = client_len;
        }
        if (full) {
                glog(g, "SERVFAIL for '%s': %d queries in flight already", q.name, DNSG_PENDING);
                answer_error(g, s, DNSG_RCODE_SERVFAIL, false);
                return;
        }
        /* dnsmasq forwards only the seat's names here; said again, whatever it does. */
        if (!dnsg_name_allowed(&g->policy, q.name)) {
                glog(g, "REFUSED: '%s' is not an allowed name", q.name);
                answer_error(g, s, DNSG_RCODE_REFUSED, false);
                return;
        }
        s->attempt = 0;
        if (slot_send(g, s) < 0)
                slot_next_attempt(g, s);
}

/* ---- the loop ---- */

static void on_udp(Guard *g) {
        uint8_t m[DNSG_QUERY_MAX];
        struct sockaddr_storage from;
        for (int i = 0; i < 64; i++) {
                socklen_t len = sizeof(from);
                ssize_t n = recvfrom(g->udp, m, sizeof(m), MSG_TRUNC, (struct sockaddr *) &from, &len);
                if (n < 0)
                        return;
                if ((size_t) n > sizeof(m))
                        continue;
                take_query(g, m, (size_t) n, &from, len, NULL);
        }
}

static void on_accept(Guard *g) {
        int fd = accept4(g->tcp, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
                return;
        for (size_t i = 0; i < DNSG_TCP_CLIENTS; i++)
                if (g->clients[i].state == TCP_FREE) {
                        g->clients[i] = (TcpClient) { .state = TCP_READING, .fd = fd,
                                                      .deadline = now_ms() + 10 * g->timeout_ms };
                        return;
                }
        glog(g, "a TCP connection refused: %d open already", DNSG_TCP_CLIENTS);
        close(fd);
}

static void on_client(Guard *g, TcpClient *c) {
        ssize_t n = recv(c->fd, c->buf + c->have, sizeof(c->buf) - c->have, 0);
        if (n <= 0) {
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return;
                close(c->fd);
                c->state = TCP_FREE;
                return;
        }
        c->have += (size_t) n;
        if (c->have < 2)
                return;
        size_t want = (size_t) c->buf[0] << 8 | c->buf[1];
        if (want > DNSG_QUERY_MAX || c->have > 2 + want) { /* too long, or pipelined: not from dnsmasq */
                close(c->fd);
                c->state = TCP_FREE;
                return;
        }
        if (c->have < 2 + want)
                return;
        c->state = TCP_WAITING;
        take_query(g, c->buf + 2, want, NULL, 0, c);
        if (c->state == TCP_WAITING) {
                bool pending = false;
                for (size_t i = 0; i < DNSG_PENDING && !pending; i++)
                        pending = g->slots[i].state != SLOT_FREE && g->slots[i].tcp_client == c;
                if (!pending) { /* a query not worth an answer */
                        close(c->fd);
                        c->state = TCP_FREE;
                }
        }
}

static void on_slot(Guard *g, Slot *s, short revents) {
        if (s->state == SLOT_CONNECTING) {
                int err = 0;
                socklen_t l = sizeof(err);
                uint8_t buf[2 + DNSG_QUERY_MAX];
                if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0 || err != 0) {
                        slot_next_attempt(g, s);
                        return;
                }
                buf[0] = (uint8_t) (s->query_len >> 8);
                buf[1] = (uint8_t) s->query_len;
                memcpy(buf + 2, s->query, s->query_len);
                if (send(s->fd, buf, s->query_len + 2, MSG_NOSIGNAL) != (ssize_t) (s->query_len + 2)) {
                        slot_next_attempt(g, s);
                        return;
                }
                s->state = SLOT_WAITING;
                return;
        }
        if (!s->tcp) {
                ssize_t n = recv(s->fd, s->answer, DNSG_UDP_MAX + 1, MSG_TRUNC);
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR) /* ICMP unreachable: the next one */
                                slot_next_attempt(g, s);
                        return;
                }
                if ((size_t) n > DNSG_UDP_MAX) {
                        glog(g, "SERVFAIL for '%s': an oversized answer (%zd bytes over UDP)", s->q.name, n);
                        answer_error(g, s, DNSG_RCODE_SERVFAIL, false);
                        return;
                }
                /* Not the answer to our id (a guess at the random port, or a stray): not
                 * the end of the query either; the real one may still come. */
                if (n < 2 || ((uint16_t) (s->answer[0] << 8 | s->answer[1])) != s->upstream_id) {
                        glog(g, "'%s': a datagram that is not the answer to our query (%zd bytes), ignored", s->q.name, n);
                        return;
                }
                finish(g, s, s->answer, (size_t) n);
                return;
        }
        ssize_t n = recv(s->fd, s->answer + s->have, sizeof(s->answer) - s->have, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n > 0)
                s->have += (size_t) n;
        size_t want = s->have >= 2 ? ((size_t) s->answer[0] << 8 | s->answer[1]) : 0;
        if (s->have >= 2 && want > DNSG_MSG_MAX) {
                glog(g, "SERVFAIL for '%s': an oversized answer (%zu bytes over TCP)", s->q.name, want);
                answer_error(g, s, DNSG_RCODE_SERVFAIL, false);
                return;
        }
        if (s->have >= 2 && s->have >= 2 + want) {
                finish(g, s, s->answer + 2, s->have - 2 > want ? s->have - 2 : want); /* extra bytes: malformed */
                return;
        }
        if (n <= 0) /* closed before a whole answer */
                slot_next_attempt(g, s);
        (void) revents;
}

static void expire(Guard *g, int64_t now) {
        for (size_t i = 0; i < DNSG_PENDING; i++)
                if (g->slots[i].state != SLOT_FREE && now >= g->slots[i].deadline)
                        slot_next_attempt(g, &g->slots[i]);
        for (size_t i = 0; i < DNSG_TCP_CLIENTS; i++)
                if (g->clients[i].state == TCP_READING && now >= g->clients[i].deadline) {
                        close(g->clients[i].fd);
                        g->clients[i].state = TCP_FREE;
                }
}

static int run(Guard *g) {
        enum { FIXED = 3 };
        struct pollfd p[FIXED + DNSG_PENDING + DNSG_TCP_CLIENTS];
        void *owner[ELEMENTSOF(p)];

        for (;;) {
                size_t n = 0;
                int64_t now = now_ms(), next = now + 60000;
                p[n++] = (struct pollfd) { .fd = g->udp, .events = POLLIN };
                p[n++] = (struct pollfd) { .fd = g->tcp, .events = POLLIN };
                p[n++] = (struct pollfd) { .fd = g->lifeline, .events = POLLIN };
                for (size_t i = 0; i < DNSG_PENDING; i++) {
                        Slot *s = &g->slots[i];
                        if (s->state == SLOT_FREE)
                                continue;
                        owner[n] = s;
                        p[n++] = (struct pollfd) { .fd = s->fd, .events = s->state == SLOT_CONNECTING ? POLLOUT : POLLIN };
                        next = MIN(next, s->deadline);
                }
                size_t first_client = n;
                for (size_t i = 0; i < DNSG_TCP_CLIENTS; i++) {
                        TcpClient *c = &g->clients[i];
                        if (c->state == TCP_FREE)
                                continue;
                        owner[n] = c;
                        /* while its query is out, only a hang-up is looked for */
                        p[n++] = (struct pollfd) { .fd = c->fd, .events = c->state == TCP_READING ? POLLIN : 0 };
                        if (c->state == TCP_READING)
                                next = MIN(next, c->deadline);
                }
                int r = poll(p, n, (int) MAX(0, next - now));
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (p[2].revents)
                        return 0; /* seatd is gone (or wrote to us: it never does) */
                if (p[0].revents & POLLIN)
                        on_udp(g);
                if (p[1].revents & POLLIN)
                        on_accept(g);
                for (size_t i = FIXED; i < first_client; i++)
                        if (p[i].revents && ((Slot *) owner[i])->state != SLOT_FREE && ((Slot *) owner[i])->fd == p[i].fd)
                                on_slot(g, owner[i], p[i].revents);
                for (size_t i = first_client; i < n; i++) {
                        TcpClient *c = owner[i];
                        if (!p[i].revents || c->state == TCP_FREE || c->fd != p[i].fd)
                                continue;
                        if (c->state == TCP_READING)
                                on_client(g, c);
                        else if (p[i].revents & (POLLHUP | POLLERR)) { /* gone while its query was out */
                                for (size_t k = 0; k < DNSG_PENDING; k++)
                                        if (g->slots[k].state != SLOT_FREE && g->slots[k].tcp_client == c)
                                                slot_close(&g->slots[k]);
                                close(c->fd);
                                c->state = TCP_FREE;
                        }
                }
                expire(g, now_ms());
        }
}

static void usage(void) {
        fprintf(stderr, "usage: seat-dnsguard --listen ADDR[:PORT] --upstream ADDR[:PORT]... --allow NAME... "
                        "[--user USER] [--lifeline-fd FD] [--ready-fd FD] [--timeout-ms MS]\n");
}

int main(int argc, char *argv[]) {
        static Guard g = { .udp = -1, .tcp = -1, .lifeline = -1, .timeout_ms = 1500 };
        static const struct option opts[] = {
                { "listen", required_argument, NULL, 'l' },      { "upstream", required_argument, NULL, 'u' },
                { "allow", required_argument, NULL, 'a' },       { "user", required_argument, NULL, 'U' },
                { "lifeline-fd", required_argument, NULL, 'f' }, { "timeout-ms", required_argument, NULL, 't' },
                { "ready-fd", required_argument, NULL, 'r' },    {},
        };
        const char *listen_spec = NULL, *user = "nobody";
        int c, r, ready = -1;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0)
                switch (c) {
                case 'l':
                        listen_spec = optarg;
                        break;
                case 'u':
                        if (g.n_up == DNSG_UPSTREAMS || parse_addr(optarg, 53, &g.up[g.n_up].sa, &g.up[g.n_up].len) < 0) {
                                fprintf(stderr, "seat-dnsguard: bad or too many upstreams at '%s'\n", optarg);
                                return 2;
                        }
                        g.n_up++;
                        break;
                case 'a':
                        if (g.policy.n_names == DNSG_ALLOW_MAX || strlen(optarg) > DNSG_NAME_MAX) {
                                fprintf(stderr, "seat-dnsguard: bad or too many names at '%s'\n", optarg);
                                return 2;
                        }
                        g.allow[g.policy.n_names++] = optarg;
                        break;
                case 'U':
                        user = optarg;
                        break;
                case 'f':
                        g.lifeline = atoi(optarg);
                        break;
                case 't':
                        g.timeout_ms = atoi(optarg);
                        break;
                case 'r':
                        ready = atoi(optarg);
                        break;
                default:
                        usage();
                        return 2;
                }
        if (!listen_spec || g.n_up == 0 || g.policy.n_names == 0 || g.timeout_ms < 100 || g.timeout_ms > 30000 ||
            optind != argc) {
                usage();
                return 2;
        }
        g.policy.names = g.allow;
        for (size_t i = 0; i < DNSG_PENDING; i++)
                g.slots[i].fd = -1;
        signal(SIGPIPE, SIG_IGN);
        if ((r = listen_on(&g, listen_spec)) < 0) {
                fprintf(stderr, "seat-dnsguard: cannot listen on '%s': %s\n", listen_spec, strerror(-r));
                return 1;
        }
        if ((r = drop_privileges(user)) < 0) {
                fprintf(stderr, "seat-dnsguard: cannot become user '%s': %s\n", user, strerror(-r));
                return 1;
        }
        fprintf(stderr, "seat-dnsguard: listening on %s for %zu names, %zu upstreams, as uid %u\n", listen_spec,
                g.policy.n_names, g.n_up, (unsigned) getuid());
        if (ready >= 0 && (write(ready, "1", 1) != 1 || close(ready) < 0)) {
                fprintf(stderr, "seat-dnsguard: cannot say it is ready: %m\n");
                return 1;
        }
        r = run(&g);
        if (r < 0) {
                fprintf(stderr, "seat-dnsguard: %s\n", strerror(-r));
                return 1;
        }
        return 0;
}
