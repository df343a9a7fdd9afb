/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatctl forward SEAT [ADDR:]LPORT:GUEST_HOST:GPORT: every TCP connection to the local
 * port becomes a stream of one seat.forward tunnel (docs/protocol-control.md, "Port
 * forwarding"), carried over the seat's agent channel to GUEST_HOST:GPORT as the guest
 * sees it. One control connection carries them all: seatd gives the tunnel the seat's
 * agent while it has streams. Each direction ends on its own (half-close).
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "common/peer-uid.h"
#include "common/sockaddr.h"
#include "forward.h"
#include "seatctl.h"

#define SEND_CHUNK (32u * 1024u)       /* one seat.forward.send (seatd takes ≤ 64 KiB) */
#define INFLIGHT_MAX 14u               /* seatd allows 16 requests in flight: the tunnel and room */
#define LOCALS_MAX 64u                 /* accepted connections at once (seatd caps its own) */
#define LOCAL_BUFFER_MAX (16u << 20)   /* bytes for a local client that does not read: then it is cut */
#define FORWARD_REFUSAL_WAIT_MS 300

typedef struct Local Local;
struct Local {
        Local *next;
        int fd;
        int64_t stream;      /* the id of its seat.forward.open */
        int64_t send_id;     /* the seat.forward.send in flight, 0: none */
        bool open;           /* the guest connected */
        bool rd_eof;         /* the local client's end was sent */
        bool remote_eof;     /* the guest's peer sent its end ... */
        bool wr_shut;        /* ... and the local client was told */
        bool closed;         /* seatd said the stream is over */
        bool aborted;        /* the local side failed: dropped */
        uint8_t *out;        /* for the local client: out[off..len) */
        size_t len, off;
        char peer[INET6_ADDRSTRLEN + 8];
        int pfd;
};

struct Forwarder {
        CtlClient *c;
        int64_t tunnel;
        int listen_fd;
        int stop_fd;         /* eventfd: forwarder_stop() from another thread */
        Local *locals;
        unsigned n_locals, inflight;
        char *seat;
        ForwardSpec spec;
};

static void forward_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl forward SEAT [ADDR:]LPORT:GUEST_HOST:GPORT\n"
                "  TCP connections to ADDR:LPORT (default 127.0.0.1; LPORT 0: any free port) reach\n"
                "  GUEST_HOST:GPORT as the seat's guest sees it, through its agent (not its network).\n"
                "  GUEST_HOST is an address (IPv6 in brackets) or localhost. Runs until interrupted.\n"
                "  Only your own local user's connections are carried: another user's are refused.\n");
}

static Local *local_free(Local *l) {
        if (!l)
                return NULL;
        safe_close(l->fd);
        free(l->out);
        return mfree(l);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Local *, local_free)

static json_object *stream_params(Forwarder *f, Local *l) {
        json_object *p = json_object_new_object();
        if (!p)
                return NULL;
        json_object_object_add(p, "forward", json_object_new_int64(f->tunnel));
        if (l)
                json_object_object_add(p, "stream", json_object_new_int64(l->stream));
        return p;
}

static int send_data(Forwarder *f, Local *l, const uint8_t *data, size_t n, bool eof, SeatError **ret_error) {
        _cleanup_json_ json_object *p = stream_params(f, l);
        if (ctl_params_add_data(p, data, n, eof) < 0)
                return -ENOMEM;
        int r = ctl_send(f->c, "seat.forward.send", p, &l->send_id, ret_error);
        if (r >= 0)
                f->inflight++;
        return r;
}

/* The local side failed (reset, or it stopped reading): the guest's connection is reset. */
static int local_abort(Forwarder *f, Local *l, SeatError **ret_error) {
        if (l->aborted)
                return 0;
        l->aborted = true;
        free(l->out);
        l->out = NULL;
        l->len = l->off = 0;
        if (!l->open || l->closed)
                return 0;
        _cleanup_json_ json_object *p = stream_params(f, l);
        if (!p)
                return -ENOMEM;
        int r = ctl_send(f->c, "seat.forward.close", p, NULL, ret_error);
        if (r >= 0)
                f->inflight++;
        return r;
}

static void format_peer(const struct sockaddr_storage *sa, char *buf, size_t size) {
        char a[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        if (sa->ss_family == AF_INET) {
                inet_ntop(AF_INET, &((const struct sockaddr_in *) sa)->sin_addr, a, sizeof(a));
                port = ntohs(((const struct sockaddr_in *) sa)->sin_port);
        } else if (sa->ss_family == AF_INET6) {
                inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) sa)->sin6_addr, a, sizeof(a));
                port = ntohs(((const struct sockaddr_in6 *) sa)->sin6_port);
        }
        snprintf(buf, size, "%s:%u", a, port);
}

/* Whether the connection is our own user's. A port on 127.0.0.1 is open to every user of
 * the host, and what comes through it reaches the seat with our token and is recorded as
 * ours: anyone else's is refused, and so is one whose owner cannot be found out (no
 * sock_diag, or a peer on another host when ADDR is not a loopback address). */
static bool local_owner_ok(int fd, const char *peer) {
        uid_t uid = 0, me = geteuid();
        int r = peer_uid_tcp(fd, &uid);
        if (r >= 0 && uid == me)
                return true;
        if (r >= 0)
                fprintf(stderr,
                        "seatctl: forward: connection from %s refused: made by local uid %u, not by uid %u (only this "
                        "user's own connections are carried)\n",
                        peer, (unsigned) uid, (unsigned) me);
        else if (r == -ENOENT || r == -ESRCH)
                fprintf(stderr,
                        "seatctl: forward: connection from %s refused: no open socket of this host made it (closed "
                        "already, or from another host), so its user is unknown\n",
                        peer);
        else {
                errno = -r; /* (%m: strerror() is not for threads, and forward_port runs on them) */
                fprintf(stderr,
                        "seatctl: forward: connection from %s refused: cannot tell which local user made it "
                        "(sock_diag: %m), so it is not carried\n",
                        peer);
        }
        return false;
}

static int local_accept(Forwarder *f, SeatError **ret_error) {
        struct sockaddr_storage sa;
        socklen_t sl = sizeof(sa);
        char peer[sizeof(((Local *) NULL)->peer)];
        _cleanup_close_ int fd = accept4(f->listen_fd, (struct sockaddr *) &sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
                return errno == EAGAIN || errno == EINTR || errno == ECONNABORTED ? 0
                                                                                   : seat_error_set(ret_error, errno, "accept: %m");
        format_peer(&sa, peer, sizeof(peer));
        if (!local_owner_ok(fd, peer))
                return 0; /* closed here, before seatd or the guest hear of it */
        _cleanup_(local_freep) Local *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->fd = TAKE_FD(fd);
        l->pfd = -1;
        memcpy(l->peer, peer, sizeof(l->peer));
        _cleanup_json_ json_object *p = stream_params(f, NULL);
        int r = p ? ctl_send(f->c, "seat.forward.open", p, &l->stream, ret_error) : -ENOMEM;
        if (r < 0)
                return r;
        f->inflight++;
        l->next = f->locals;
        f->locals = TAKE_PTR(l);
        f->n_locals++;
        return 0;
}

static void local_flush(Forwarder *f, Local *l, SeatError **ret_error) {
        while (!l->aborted && l->off < l->len) {
                ssize_t n = send(l->fd, l->out + l->off, l->len - l->off, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        (void) local_abort(f, l, ret_error);
                        return;
                }
                l->off += (size_t) n;
        }
        if (l->off == l->len) {
                free(l->out);
                l->out = NULL;
                l->len = l->off = 0;
                if (l->remote_eof && !l->wr_shut) {
                        (void) shutdown(l->fd, SHUT_WR);
                        l->wr_shut = true;
                }
        }
}

static int local_append(Local *l, const void *data, size_t n) {
        size_t pending = l->len - l->off;
        if (pending + n > LOCAL_BUFFER_MAX)
                return -ENOBUFS;
        uint8_t *b = malloc(pending + n + 1);
        if (!b)
                return -ENOMEM;
        if (pending)
                memcpy(b, l->out + l->off, pending);
        memcpy(b + pending, data, n);
        free(l->out);
        l->out = b;
        l->off = 0;
        l->len = pending + n;
        return 0;
}

static Local *local_by_stream(Forwarder *f, int64_t id) {
        for (Local *l = f->locals; l; l = l->next)
                if (l->stream == id)
                        return l;
        return NULL;
}

static int local_read(Forwarder *f, Local *l, SeatError **ret_error) {
        uint8_t buf[SEND_CHUNK];
        ssize_t n = recv(l->fd, buf, sizeof(buf), 0);
        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                        return 0;
                return local_abort(f, l, ret_error);
        }
        if (n == 0)
                l->rd_eof = true; /* a half-close: the guest's peer gets a FIN, the other way stays open */
        return send_data(f, l, buf, (size_t) n, n == 0, ret_error);
}

static void report(Forwarder *f, Local *l, const char *what, const char *msg) {
        _cleanup_free_ char *e = log_escape(msg, strlen(msg), 512);
        fprintf(stderr, "seatctl: forward: connection from %s %s: %s\n", l->peer, what, e ? e : "?");
}

/* A message from seatd: the tunnel's events and end, or an answer to a follow-up. */
static int handle(Forwarder *f, ControlMsg *m, SeatError **ret_error) {
        if (m->id == f->tunnel) {
                if (m->kind == CONTROL_ERROR) {
                        _cleanup_free_ char *msg = log_escape(m->error_message, strlen(m->error_message), 2048);
                        return seat_error_set(ret_error, EREMOTEIO, "%s", msg ? msg : m->error_code);
                }
                if (m->kind == CONTROL_RESULT)
                        return seat_error_set(ret_error, ECONNRESET, "seatd ended the forward");
                if (m->kind != CONTROL_EVENT)
                        return 0;
                int64_t sid = 0;
                if (json_get_int64(m->body, "stream", true, 1, (int64_t) 1 << 53, &sid) < 0)
                        return seat_error_set(ret_error, EPROTO, "seatd sent a '%s' event without its stream", m->type);
                Local *l = local_by_stream(f, sid);
                if (!l)
                        return 0;
                if (!strcmp(m->type, "data")) {
                        _cleanup_free_ void *d = NULL;
                        size_t n = 0;
                        if (json_get_base64(m->body, "data", true, 1u << 20, &d, &n) < 0)
                                return seat_error_set(ret_error, EPROTO, "seatd sent bad data");
                        if (l->aborted)
                                return 0;
                        int r = local_append(l, d, n);
                        if (r == -ENOBUFS) {
                                report(f, l, "was cut", "it does not read what the guest sends");
                                return local_abort(f, l, ret_error);
                        }
                        if (r < 0)
                                return r;
                        local_flush(f, l, ret_error);
                } else if (!strcmp(m->type, "eof")) {
                        l->remote_eof = true;
                        local_flush(f, l, ret_error);
                } else if (!strcmp(m->type, "closed")) {
                        const char *status = "", *error = NULL, *by = NULL;
                        (void) json_get_string(m->body, "status", false, 64, &status);
                        (void) json_get_string(m->body, "error", false, 4096, &error);
                        (void) json_get_string(m->body, "closed_by", false, 64, &by);
                        l->closed = true;
                        if (by && !strcmp(by, "idle"))
                                report(f, l, "was closed", "it carried nothing for seatd's forward_idle_timeout");
                        else if (error && strcmp(status, "closed"))
                                report(f, l, "ended", error);
                }
                return 0;
        }
        if (m->kind != CONTROL_RESULT && m->kind != CONTROL_ERROR)
                return 0;
        f->inflight = f->inflight > 0 ? f->inflight - 1 : 0;
        for (Local *l = f->locals; l; l = l->next) {
                if (l->stream == m->id && !l->open) {
                        if (m->kind == CONTROL_RESULT)
                                l->open = true;
                        else {
                                report(f, l, "refused", m->error_message);
                                l->closed = l->aborted = true;
                        }
                        return 0;
                }
                if (l->send_id == m->id) {
                        l->send_id = 0;
                        if (m->kind == CONTROL_ERROR && !l->closed)
                                return local_abort(f, l, ret_error);
                        return 0;
                }
        }
        return 0;
}

/* A local connection is done when seatd ended its stream and what it sent was written. */
static void reap(Forwarder *f) {
        for (Local **p = &f->locals; *p;) {
                Local *l = *p;
                if (l->closed && !l->send_id && (l->aborted || l->off == l->len)) {
                        *p = l->next;
                        f->n_locals--;
                        local_free(l);
                } else
                        p = &l->next;
        }
}

static int forward_loop(Forwarder *f, SeatError **ret_error) {
        _cleanup_free_ struct pollfd *p = calloc(LOCALS_MAX + 3, sizeof(*p));
        if (!p)
                return -ENOMEM;
        for (;;) {
                _cleanup_control_msg_ ControlMsg *m = NULL;
                int r = ctl_next(f->c, false, &m, ret_error);
                if (r < 0)
                        return r;
                if (r > 0) {
                        if ((r = handle(f, m, ret_error)) < 0)
                                return r;
                        reap(f);
                        continue;
                }
                unsigned n = 0;
                p[n++] = (struct pollfd) { .fd = ctl_client_fd(f->c), .events = POLLIN };
                bool room = f->inflight < INFLIGHT_MAX;
                p[n++] = (struct pollfd) { .fd = room && f->n_locals < LOCALS_MAX ? f->listen_fd : -1, .events = POLLIN };
                p[n++] = (struct pollfd) { .fd = f->stop_fd, .events = POLLIN };
                for (Local *l = f->locals; l; l = l->next) {
                        short ev = 0;
                        if (l->open && !l->closed && !l->aborted && !l->rd_eof && !l->send_id && room)
                                ev |= POLLIN;
                        if (l->off < l->len && !l->aborted)
                                ev |= POLLOUT;
                        l->pfd = -1;
                        if (ev) {
                                l->pfd = (int) n;
                                p[n++] = (struct pollfd) { .fd = l->fd, .events = ev };
                        }
                }
                if (poll(p, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return seat_error_set(ret_error, errno, "poll: %m");
                }
                for (Local *l = f->locals; l; l = l->next) {
                        if (l->pfd < 0 || !p[l->pfd].revents)
                                continue;
                        if (p[l->pfd].revents & POLLOUT)
                                local_flush(f, l, ret_error);
                        if ((p[l->pfd].revents & (POLLIN | POLLHUP | POLLERR)) && (p[l->pfd].events & POLLIN) &&
                            f->inflight < INFLIGHT_MAX && (r = local_read(f, l, ret_error)) < 0)
                                return r;
                }
                if (p[2].revents)
                        return 0; /* forwarder_stop() */
                if (p[1].revents && (r = local_accept(f, ret_error)) < 0)
                        return r;
                if (p[0].revents) {
                        r = ctl_next(f->c, true, &m, ret_error);
                        if (r < 0)
                                return r;
                        if (r > 0 && (r = handle(f, m, ret_error)) < 0)
                                return r;
                }
                reap(f);
        }
}

static int listen_on(const ForwardSpec *s, int *ret_fd, unsigned *ret_port, SeatError **ret_error) {
        struct sockaddr_storage sa;
        socklen_t sl;
        struct sockaddr_in *in4 = (struct sockaddr_in *) &sa;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &sa;
        if (sockaddr_from_ip(s->bind, s->lport, &sa, &sl) < 0)
                return seat_error_set(ret_error, EINVAL, "'%s' is not an address to listen on", s->bind);
        _cleanup_close_ int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd < 0)
                return seat_error_set(ret_error, errno, "socket: %m");
        (void) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *) &sa, sl) < 0)
                return seat_error_set(ret_error, errno, "cannot listen on %s port %u: %m", s->bind, s->lport);
        if (listen(fd, 64) < 0)
                return seat_error_set(ret_error, errno, "listen: %m");
        sl = sizeof(sa);
        if (getsockname(fd, (struct sockaddr *) &sa, &sl) < 0)
                return seat_error_set(ret_error, errno, "getsockname: %m");
        *ret_port = ntohs(sa.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

Forwarder *forwarder_free(Forwarder *f) {
        if (!f)
                return NULL;
        while (f->locals) {
                Local *l = f->locals;
                f->locals = l->next;
                local_free(l);
        }
        safe_close(f->listen_fd);
        safe_close(f->stop_fd);
        f->c = ctl_client_free(f->c); /* seatd then ends the tunnel's connections */
        free(f->seat);
        return mfree(f);
}

int forwarder_open(const char *seat, const ForwardSpec *spec, const char *token, json_object *tool, Forwarder **ret,
                   unsigned *ret_port, SeatError **ret_error) {
        _cleanup_(forwarder_freep) Forwarder *f = calloc(1, sizeof(*f));
        _cleanup_json_ json_object *params = json_object_new_object();
        if (!f || !params || !(f->seat = strdup(seat)))
                return -ENOMEM;
        f->listen_fd = f->stop_fd = -EBADF;
        f->spec = *spec;
        f->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (f->stop_fd < 0)
                return seat_error_set(ret_error, errno, "eventfd: %m");
        json_object_object_add(params, "seat", json_object_new_string(seat));
        json_object_object_add(params, "host", json_object_new_string(spec->host));
        json_object_object_add(params, "port", json_object_new_int(spec->gport));
        if (token)
                json_object_object_add(params, "token", json_object_new_string(token));
        if (tool)
                json_object_object_add(params, "tool", json_object_get(tool));
        int r = ctl_connect_as(ctl_opts.socket, token != NULL, &f->c, ret_error);
        if (r < 0)
                return r;
        r = listen_on(&f->spec, &f->listen_fd, ret_port, ret_error);
        if (r < 0)
                return r;
        r = ctl_send(f->c, "seat.forward", params, &f->tunnel, ret_error);
        if (r < 0)
                return r;
        f->inflight = 1;
        /* seatd refuses at once what it refuses before any connection (the token, the
         * target's form): wait a moment for that, so the caller can say so. */
        struct pollfd pf = { .fd = ctl_client_fd(f->c), .events = POLLIN };
        if (poll(&pf, 1, FORWARD_REFUSAL_WAIT_MS) > 0) {
                _cleanup_control_msg_ ControlMsg *m = NULL;
                r = ctl_next(f->c, true, &m, ret_error);
                if (r < 0)
                        return r;
                if (r > 0 && (r = handle(f, m, ret_error)) < 0)
                        return r;
        }
        *ret = TAKE_PTR(f);
        return 0;
}

int forwarder_run(Forwarder *f, SeatError **ret_error) {
        int r = forward_loop(f, ret_error);
        /* The tunnel is over (a reset, seatd gone): connections to the port are refused
         * now, not left waiting in its backlog (seatctl mcp keeps the forward until the
         * session ends). */
        if (r < 0)
                f->listen_fd = safe_close(f->listen_fd);
        return r;
}

void forwarder_stop(Forwarder *f) {
        uint64_t one = 1;
        (void) !write(f->stop_fd, &one, sizeof(one));
}

int verb_forward(int argc, char *argv[], SeatError **ret_error) {
        ForwardSpec spec;
        const char *why = NULL;
        unsigned port = 0;

        if (argc != 3 || argv[1][0] == '-') {
                forward_usage(argc == 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
                return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
        }
        if (forward_spec_parse(argv[2], &spec, &why) < 0) {
                seat_error_set(ret_error, EINVAL, "'%s': %s", argv[2], why);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        _cleanup_free_ char *token = NULL;
        _cleanup_(forwarder_freep) Forwarder *f = NULL;
        if (ctl_load_token(ctl_opts.token_file, &token, ret_error) < 0 ||
            forwarder_open(argv[1], &spec, token, NULL, &f, &port, ret_error) < 0)
                return 1;
        bool v6 = strchr(spec.bind, ':'), g6 = strchr(spec.host, ':');
        fprintf(stderr, "seatctl: forwarding %s%s%s:%u to %s%s%s:%u in seat '%s' (Ctrl-C stops)\n", v6 ? "[" : "",
                spec.bind, v6 ? "]" : "", port, g6 ? "[" : "", spec.host, g6 ? "]" : "", spec.gport, argv[1]);
        return forwarder_run(f, ret_error) < 0 ? 1 : 0;
}
