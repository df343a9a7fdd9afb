/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TCP connections made inside the guest for the host (`connect`, capability "tcp",
 * docs/protocol-agent.md "Connections"): seatd's port forwarding. A connection is driven
 * like a live exec: `stdin` requests carry bytes to the peer (acknowledged with the same
 * flow control), what the peer sends comes back as `output` frames, and `exit` ends it.
 * Each direction ends on its own (half-close): the host's `eof` becomes shutdown(SHUT_WR),
 * the peer's end an `output` with `eof`.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/sockaddr.h"

struct Forward {
        Forward *next;
        int64_t id;
        int fd;          /* the socket, non-blocking; -EBADF once closed */
        int pfd;         /* index in the current poll set, or -1 */
        bool connecting; /* connect() in progress: POLLOUT says how it went */
        int64_t start_ms, connect_deadline_ms;
        char target[AGENT_CONNECT_HOST_MAX + 16]; /* "host:port", for logs and errors */

        uint8_t *buf; /* bytes for the peer: buf[off..len) */
        size_t len, off;
        bool host_eof;   /* the host sends no more */
        bool wr_shut;    /* ... and the peer was told (shutdown(SHUT_WR)) */
        bool peer_eof;   /* the peer sends no more (told to the host) */
        AgentAcks acks;  /* of stdin requests whose data is in buf */

        uint64_t received, sent;
        bool detached; /* of an earlier host session: closed, never reported */
        bool done;     /* finished: exit sent (or not, when detached), to be freed */
};

static Forward *forward_find(Agent *a, int64_t id) {
        for (Forward *f = a->forwards; f; f = f->next)
                if (f->id == id && !f->detached && !f->done)
                        return f;
        return NULL;
}

bool forward_owns(Agent *a, int64_t id) {
        return forward_find(a, id) != NULL;
}

static void forward_flush_acks(Agent *a, Forward *f, const char *code, const char *message) {
        agent_acks_flush(a, &f->acks, f->detached, "connection", f->id, code, message);
}

/* End the connection and report it: code 0 when both directions ended, else the reason
 * (error) or the signal of a `kill`. */
static void forward_end(Agent *a, Forward *f, int signal, const char *error) {
        AgentMsg m = { .type = AGENT_MSG_EXIT, .id = f->id };

        if (f->done)
                return;
        f->done = true;
        forward_flush_acks(a, f, AGENT_ERR_STATE, "has ended");
        f->fd = safe_close(f->fd);
        if (f->detached)
                return;
        m.exit.code = signal ? -1 : error ? 1 : 0;
        m.exit.signal = signal;
        m.exit.duration_ms = now_monotonic_ms() - f->start_ms;
        m.exit.stdout_bytes = (int64_t) f->received;
        m.exit.error = (char *) error;
        log_info("Connection %" PRId64 " to %s ended: %" PRIu64 " bytes in, %" PRIu64 " out%s%s", f->id, f->target,
                 f->received, f->sent, error ? ": " : "", error ?: "");
        (void) agent_send(a, &m);
}

static void forward_fail_errno(Agent *a, Forward *f, const char *what, int err) {
        char msg[512];
        (void) snprintf(msg, sizeof(msg), "%s %s: %s", what, f->target, strerror(err));
        forward_end(a, f, 0, msg);
}

/* Only addresses are taken, and "localhost": a static PID 1 has no resolver library, and a
 * blocking DNS lookup would stall every exec on this loop. */
static int forward_address(const char *host, int64_t port, struct sockaddr_storage *ret, socklen_t *ret_len) {
        if (strcmp(host, "localhost") == 0)
                host = "127.0.0.1";
        return sockaddr_from_ip(host, (uint16_t) port, ret, ret_len) < 0 ? -EADDRNOTAVAIL : 0;
}

static void forward_connected(Agent *a, Forward *f) {
        AgentMsg started = { .type = AGENT_MSG_STARTED, .id = f->id, .started.pid = 0 };
        int one = 1;

        f->connecting = false;
        (void) setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)); /* keystrokes, not bulk */
        log_info("Connection %" PRId64 " to %s established", f->id, f->target);
        (void) agent_send(a, &started);
}

int forward_handle_connect(Agent *a, const AgentMsg *m) {
        struct sockaddr_storage sa;
        socklen_t sa_len = 0;
        Forward *f;
        int r;

        if (forward_find(a, m->id))
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "request %" PRId64 " is still running", m->id);
        if (a->n_forwards >= AGENT_FORWARDS_MAX)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "already %u connections open", a->n_forwards);
        r = forward_address(m->connect.host, m->connect.port, &sa, &sa_len);
        if (r < 0)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID,
                                        "host '%s' is not an address: give an IPv4 or IPv6 address, or localhost "
                                        "(names are not resolved)", m->connect.host);

        f = calloc(1, sizeof(*f));
        if (!f)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "out of memory");
        *f = (Forward) { .id = m->id, .fd = -EBADF, .pfd = -1, .start_ms = now_monotonic_ms() };
        (void) snprintf(f->target, sizeof(f->target), strchr(m->connect.host, ':') ? "[%s]:%" PRId64 : "%s:%" PRId64,
                        m->connect.host, m->connect.port);
        f->connect_deadline_ms = f->start_ms +
                (m->connect.timeout_ms > 0 ? m->connect.timeout_ms : AGENT_CONNECT_TIMEOUT_DEFAULT_MS);

        f->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (f->fd < 0) {
                r = errno;
                free(f);
                return agent_send_error(a, m->id, AGENT_ERR_IO, "cannot create a socket: %s", strerror(r));
        }
        if (connect(f->fd, (struct sockaddr *) &sa, sa_len) < 0 && errno != EINPROGRESS) {
                r = errno;
                safe_close(f->fd);
                (void) agent_send_error(a, m->id, AGENT_ERR_IO, "connect to %s: %s", f->target, strerror(r));
                free(f);
                return 0;
        }
        f->connecting = true; /* even when it completed at once: POLLOUT reports it */
        f->next = a->forwards;
        a->forwards = f;
        a->n_forwards++;
        log_info("Connection %" PRId64 ": connecting to %s", f->id, f->target);
        return 0;
}

static void forward_write(Agent *a, Forward *f) {
        while (f->fd >= 0 && f->off < f->len) {
                ssize_t n = send(f->fd, f->buf + f->off, f->len - f->off, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        forward_fail_errno(a, f, "send to", errno);
                        return;
                }
                f->off += (size_t) n;
                f->sent += (uint64_t) n;
        }
        if (f->acks.n > 0 && f->len - f->off <= AGENT_STDIN_ACK_WATER)
                forward_flush_acks(a, f, NULL, NULL);
        if (f->off == f->len) {
                free(f->buf);
                f->buf = NULL;
                f->len = f->off = 0;
                if (f->host_eof && !f->wr_shut && f->fd >= 0) {
                        if (shutdown(f->fd, SHUT_WR) < 0 && errno != ENOTCONN) {
                                forward_fail_errno(a, f, "shutdown of", errno);
                                return;
                        }
                        f->wr_shut = true;
                }
        }
        if (f->wr_shut && f->peer_eof)
                forward_end(a, f, 0, NULL);
}

int forward_handle_stdin(Agent *a, const AgentMsg *m) {
        Forward *f = forward_find(a, m->stdin_msg.exec);
        int r;

        if (!f)
                return agent_send_error(a, m->id, AGENT_ERR_NOT_FOUND, "no open connection %" PRId64, m->stdin_msg.exec);
        if (f->host_eof)
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "connection %" PRId64 " was half-closed already", f->id);
        if (f->acks.n >= AGENT_STDIN_ACKS_MAX)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "connection %" PRId64 " has %u requests waiting",
                                        f->id, f->acks.n);
        r = agent_pending_append(&f->buf, &f->off, &f->len, m->stdin_msg.data, m->stdin_msg.len);
        if (r == -ENOBUFS)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "connection %" PRId64 " has more than %u bytes pending",
                                        f->id, AGENT_STDIN_PENDING_MAX);
        if (r < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "out of memory");
        if (m->stdin_msg.eof)
                f->host_eof = true;
        if (f->len - f->off > AGENT_STDIN_ACK_WATER) {
                f->acks.ids[f->acks.n++] = m->id; /* answered by forward_write() */
                if (!f->connecting)
                        forward_write(a, f);
                return 0;
        }
        r = agent_send_ok(a, m->id, -1);
        if (!f->connecting)
                forward_write(a, f);
        return r;
}

int forward_handle_kill(Agent *a, const AgentMsg *m) {
        Forward *f = forward_find(a, m->kill.exec);

        if (!f)
                return agent_send_error(a, m->id, AGENT_ERR_NOT_FOUND, "no open connection %" PRId64, m->kill.exec);
        /* A reset (RST) rather than a FIN: the host's side was aborted, not finished. */
        struct linger lg = { .l_onoff = 1, .l_linger = 0 };
        if (f->fd >= 0)
                (void) setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        int r = agent_send_ok(a, m->id, -1);
        forward_end(a, f, (int) m->kill.signal, NULL);
        return r;
}

int forward_add_pollfds(Agent *a, PollSet *s) {
        for (Forward *f = a->forwards; f; f = f->next) {
                bool read_peer = !agent_stream_backpressured(a, f->id);
                short events = 0;

                f->pfd = -1;
                if (f->done || f->fd < 0)
                        continue;
                if (f->connecting)
                        events = POLLOUT;
                else {
                        if (read_peer && !f->peer_eof)
                                events |= POLLIN;
                        if (f->off < f->len)
                                events |= POLLOUT;
                }
                if (events && (f->pfd = poll_set_add(s, f->fd, events)) < 0)
                        return f->pfd;
        }
        return 0;
}

static void forward_read(Agent *a, Forward *f) {
        static uint8_t buf[AGENT_PIPE_READ_MAX];
        ssize_t n = recv(f->fd, buf, MIN(sizeof(buf), agent_chunk_max(a)), 0);

        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        forward_fail_errno(a, f, "receive from", errno);
                return;
        }
        if (n == 0) {
                AgentMsg eof = { .type = AGENT_MSG_OUTPUT, .id = f->id, .output.eof = true };
                f->peer_eof = true;
                if (!f->detached)
                        (void) agent_send(a, &eof);
                if (f->wr_shut)
                        forward_end(a, f, 0, NULL);
                return;
        }
        f->received += (uint64_t) n;
        if (!f->detached)
                (void) agent_send_output(a, f->id, AGENT_STREAM_STDOUT, buf, (size_t) n);
}

void forward_dispatch_pollfds(Agent *a, const PollSet *s) {
        for (Forward *f = a->forwards; f; f = f->next) {
                short rev;

                if (f->pfd < 0 || f->done)
                        continue;
                rev = s->fds[f->pfd].revents;
                f->pfd = -1;
                if (!rev)
                        continue;
                if (f->connecting) {
                        int err = 0;
                        socklen_t l = sizeof(err);
                        if (getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                                err = errno;
                        if (err) {
                                /* Never established: the request fails as a whole. */
                                (void) agent_send_error(a, f->id, AGENT_ERR_IO, "connect to %s: %s", f->target,
                                                        strerror(err));
                                f->detached = true;
                                forward_end(a, f, 0, NULL);
                                continue;
                        }
                        forward_connected(a, f);
                        forward_write(a, f);
                        continue;
                }
                if (!f->peer_eof && (rev & (POLLIN | POLLHUP | POLLERR)))
                        forward_read(a, f);
                if (!f->done && (rev & (POLLOUT | POLLERR)))
                        forward_write(a, f);
        }
}

int64_t forward_next_deadline(const Agent *a) {
        int64_t d = INT64_MAX;
        for (const Forward *f = a->forwards; f; f = f->next) {
                if (f->done)
                        return 0; /* free it right away */
                if (f->connecting)
                        d = MIN(d, f->connect_deadline_ms);
        }
        return d;
}

static void forward_unlink_done(Agent *a) {
        for (Forward **p = &a->forwards; *p;) {
                Forward *f = *p;
                if (!f->done) {
                        p = &f->next;
                        continue;
                }
                *p = f->next;
                a->n_forwards--;
                safe_close(f->fd);
                free(f->buf);
                free(f);
        }
}

void forward_process_timers(Agent *a) {
        int64_t now = now_monotonic_ms();

        for (Forward *f = a->forwards; f; f = f->next)
                if (!f->done && f->connecting && now >= f->connect_deadline_ms) {
                        (void) agent_send_error(a, f->id, AGENT_ERR_IO, "connect to %s: timed out", f->target);
                        f->detached = true;
                        forward_end(a, f, 0, NULL);
                }
        forward_unlink_done(a);
}

void forward_detach_all(Agent *a) {
        for (Forward *f = a->forwards; f; f = f->next) {
                if (f->done)
                        continue;
                log_info("Connection %" PRId64 " belongs to an earlier host session: closing it", f->id);
                f->detached = true;
                forward_end(a, f, 0, NULL);
        }
        forward_unlink_done(a);
}

void forward_free_all(Agent *a) {
        for (Forward *f = a->forwards; f; f = f->next)
                f->done = true;
        forward_unlink_done(a);
}
