/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
/* server.c: the control server's connections, requests and dispatch, and its life (see
 * server-internal.h for the other files). */
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/strprintf.h"
#include "common/log.h"
#include "common/list.h"
#include "server-internal.h"

static int hello_method(Request *req);

static const Method builtin_methods[] = {
        { "hello", hello_method, false, false },
};

/* ---- connections ---- */

void conn_unref(Conn *c) {
        if (!c || --c->refs > 0)
                return;
        frame_reader_free(c->reader);
        free(c->out);
        free(c);
}

void conn_close(Conn *c) {
        if (c->closed)
                return;
        c->closed = true;
        atomic_store(&c->gone, true);
        c->src = event_source_free(c->src);
        c->fd = safe_close(c->fd);
        Server *s = c->server;
        LIST_REMOVE(next, prev, s->conns, c);
        s->n_conns--;
        log_debug("client pid %d uid %u disconnected", (int) c->cred.pid, (unsigned) c->cred.uid);
        conn_unref(c);
}

static int conn_update_events(Conn *c) {
        if (c->closed)
                return 0;
        uint32_t ev = (c->close_after_flush ? 0 : EPOLLIN) | (c->out_len > 0 ? EPOLLOUT : 0);
        return event_source_set_events(c->src, ev);
}

static int conn_flush(Conn *c) {
        while (c->out_len > 0) {
                ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        return negative_errno();
                }
                memmove(c->out, c->out + n, c->out_len - (size_t) n);
                c->out_len -= (size_t) n;
        }
        if (c->out_len == 0 && c->close_after_flush)
                return -ECONNRESET;
        return conn_update_events(c);
}

/* Queue a line for the client. Progress may be dropped when the client reads slowly. */
/* What a uid has buffered on all its participant connections. */
static size_t participant_out_of_uid(Server *s, uid_t uid) {
        size_t total = 0;
        for (Conn *o = s->conns; o; o = o->next)
                if (o->participant && o->cred.uid == uid)
                        total += o->out_len;
        return total;
}

int conn_queue(Conn *c, const char *line, size_t len, bool droppable) {
        if (c->closed)
                return 0;
        size_t buffered = c->participant ? participant_out_of_uid(c->server, c->cred.uid) : c->out_len;
        size_t hard = c->participant ? PARTICIPANT_OUT_CAP : OUT_HARD_CAP;
        if (droppable && buffered > MIN(OUT_SOFT_CAP, hard / 4))
                return 0;
        if (buffered + len > hard) {
                log_warning("client pid %d uid %u does not read its replies (%zu bytes buffered): disconnecting",
                            (int) c->cred.pid, (unsigned) c->cred.uid, buffered);
                conn_close(c);
                return 0;
        }
        if (c->out_len + len > c->out_cap) {
                size_t cap = MAX(c->out_cap * 2, c->out_len + len);
                char *n = realloc(c->out, cap);
                if (!n)
                        return -ENOMEM;
                c->out = n;
                c->out_cap = cap;
        }
        memcpy(c->out + c->out_len, line, len);
        c->out_len += len;
        int r = conn_flush(c);
        if (r < 0)
                conn_close(c);
        return 0;
}

static void conn_send_error(Conn *c, int64_t id, const char *code, const char *message) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (control_format_error(id, code, message, &line, &len) >= 0)
                (void) conn_queue(c, line, len, false);
}

static bool peer_in_group(int fd, gid_t gid, gid_t primary) {
        gid_t groups[256];
        socklen_t len = sizeof(groups);

        if (primary == gid)
                return true;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
                return false;
        for (size_t i = 0; i < len / sizeof(gid_t); i++)
                if (groups[i] == gid)
                        return true;
        return false;
}

static bool peer_is_operator(Server *s, int fd, const struct ucred *cred) {
        if (cred->uid == 0)
                return true;
        struct group *g = getgrnam(s->config->admin_group);
        return g && peer_in_group(fd, g->gr_gid, cred->gid);
}

/* ---- requests ---- */

void inbox_free(Request *req);

Request *request_free(Request *req) {
        if (!req)
                return NULL;
        inbox_free(req);
        if (req->job_free)
                req->job_free(req->job_data);
        json_object_put(req->params);
        free(req->method);
        if (req->conn) {
                req->conn->inflight--;
                req->conn->active_ms = now_monotonic_ms();
                conn_unref(req->conn);
        }
        return mfree(req);
}

static void request_send_final(Request *req, const char *line, size_t len) {
        req->answered = true;
        (void) conn_queue(req->conn, line, len, false);
}

int request_reply_result(Request *req, json_object *result) {
        _cleanup_json_ json_object *owned = result;
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = control_format_result(req->id, owned, &line, &len);
        if (r == -E2BIG)
                return request_reply_error(req, CONTROL_ERR_INTERNAL, "the result is larger than a frame");
        if (r < 0)
                return r;
        request_send_final(req, line, len);
        request_free(req);
        return 0;
}

int request_reply_error(Request *req, const char *code, const char *fmt, ...) {
        _cleanup_free_ char *message = NULL, *line = NULL;
        size_t len;
        va_list ap;
        va_start(ap, fmt);
        message = vstrprintf(fmt, ap);
        va_end(ap);
        if (!message)
                return -ENOMEM;
        int r = control_format_error(req->id, code, message, &line, &len);
        if (r < 0)
                return r;
        request_send_final(req, line, len);
        request_free(req);
        return 0;
}

const char *seat_error_to_code(const SeatError *err) {
        switch (err ? err->code : EIO) {
        case ENOENT:
                return CONTROL_ERR_NOT_FOUND;
        case EEXIST:
                return CONTROL_ERR_EXISTS;
        case EACCES:
        case EPERM:
                return CONTROL_ERR_DENIED;
        case EINVAL:
                return CONTROL_ERR_INVALID;
        case EBUSY:
                return CONTROL_ERR_STATE;
        case EBADMSG:
        case EKEYREJECTED:
        case EKEYEXPIRED:
        case ESTALE:
                return CONTROL_ERR_VERIFICATION;
        case ECANCELED:
                return CONTROL_ERR_CANCELLED;
        case EOPNOTSUPP:
                return CONTROL_ERR_UNSUPPORTED;
        default:
                return CONTROL_ERR_IO;
        }
}

int request_reply_seat_error(Request *req, const SeatError *err) {
        return request_reply_error(req, seat_error_to_code(err), "%s", err ? err->message : "operation failed");
}

static int hello_method(Request *req) {
        int64_t version = 0;
        if (json_get_int64(req->params, "version", true, 0, 1000000, &version) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "hello needs an integer 'version'");
        if (version != CONTROL_PROTO_VERSION)
                return request_reply_error(req, CONTROL_ERR_VERSION,
                                           "protocol version %lld is not supported; seatd speaks version %d",
                                           (long long) version, CONTROL_PROTO_VERSION);
        req->conn->hello = true;
        json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "version", json_object_new_int(CONTROL_PROTO_VERSION));
        json_object_object_add(o, "server", json_object_new_string("seatd " SEATD_VERSION));
        json_object_object_add(o, "operator", json_object_new_boolean(req->operator && !req->facilitator));
        json_object_object_add(o, "facilitator", json_object_new_boolean(req->facilitator));
        return request_reply_result(req, o);
}

static const Method *find_method(Server *s, const char *name) {
        for (size_t i = 0; i < s->n_methods; i++)
                if (!strcmp(s->methods[i].name, name))
                        return &s->methods[i];
        return NULL;
}

static void dispatch(Conn *c, ControlMsg *m) {
        Server *s = c->server;

        if (m->kind != CONTROL_REQUEST)
                return conn_send_error(c, m->id, CONTROL_ERR_INVALID, "clients send requests (with 'method') only");
        const Method *method = find_method(s, m->method);
        if (!method) {
                _cleanup_free_ char *name = log_escape(m->method, strlen(m->method), 64);
                char msg[160];
                snprintf(msg, sizeof(msg), "unknown method '%s'", name ? name : "?");
                return conn_send_error(c, m->id, CONTROL_ERR_UNKNOWN_METHOD, msg);
        }
        if (!c->hello && strcmp(method->name, "hello"))
                return conn_send_error(c, m->id, CONTROL_ERR_STATE, "send 'hello' first");
        if (c->facilitator && !method->facilitator && strcmp(method->name, "hello")) {
                char msg[PATH_MAX + 200];
                snprintf(msg, sizeof(msg),
                         "'%s' is not served on the facilitator socket (the dashboard's methods are: seats' list, status, "
                         "console, audit log, provision, reset and release, pools, evidence, events, metrics): "
                         "operators use '%s'", method->name, s->config->socket_path);
                return conn_send_error(c, m->id, CONTROL_ERR_DENIED, msg);
        }
        if (method->operator_only && c->participant) {
                char msg[PATH_MAX + 160];
                snprintf(msg, sizeof(msg),
                         "'%s' is not served on the participant socket (a seat's status, exec, cp and console "
                         "are): operators use '%s'", method->name, s->config->socket_path);
                return conn_send_error(c, m->id, CONTROL_ERR_DENIED, msg);
        }
        if (method->operator_only && !c->operator && !c->facilitator)
                return conn_send_error(c, m->id, CONTROL_ERR_DENIED,
                                       "only root and members of the admin group may do this");
        if (c->inflight >= CONN_INFLIGHT_MAX)
                return conn_send_error(c, m->id, CONTROL_ERR_STATE, "too many requests in flight on this connection");
        if (s->shutting_down)
                return conn_send_error(c, m->id, CONTROL_ERR_STATE, "seatd is shutting down");

        Request *req = calloc(1, sizeof(*req));
        if (!req)
                return conn_send_error(c, m->id, CONTROL_ERR_INTERNAL, "out of memory");
        req->server = s;
        req->conn = c;
        c->refs++;
        c->inflight++;
        req->id = m->id;
        req->method = TAKE_PTR(m->method);
        req->params = TAKE_PTR(m->body);
        req->uid = c->cred.uid;
        req->operator = c->operator || c->facilitator; /* facilitators: their methods, every seat */
        req->facilitator = c->facilitator;
        log_debug("request %lld '%s' from uid %u", (long long) req->id, req->method, (unsigned) req->uid);
        int r = method->fn(req);
        if (r < 0 && !req->answered) {
                log_error_errno(r, "method '%s' failed: %m", method->name);
                (void) request_reply_error(req, CONTROL_ERR_INTERNAL, "method '%s' failed: %s", method->name, strerror(-r));
        }
}

static int conn_read(Conn *c) {
        bool filled = false;
        for (;;) {
                const char *frame;
                size_t len;
                int r = frame_reader_next(c->reader, &frame, &len);
                if (r == -E2BIG) {
                        conn_send_error(c, 0, CONTROL_ERR_TOO_LARGE, "line longer than 1 MiB: closing the connection");
                        c->close_after_flush = true;
                        return conn_update_events(c);
                }
                if (r > 0) {
                        _cleanup_control_msg_ ControlMsg *m = NULL;
                        ControlParseError err;
                        c->active_ms = now_monotonic_ms();
                        if (control_msg_parse(frame, len, &m, &err) < 0)
                                conn_send_error(c, err.id, err.code, err.message);
                        else
                                dispatch(c, m);
                        if (c->closed)
                                return 0;
                        continue;
                }
                if (filled)
                        return 0;
                ssize_t n = frame_reader_fill_max(c->reader, c->fd, CONN_READ_MAX);
                filled = true;
                if (n == -EAGAIN)
                        return 0;
                if (n <= 0)
                        return n == 0 ? -ECONNRESET : (int) n;
        }
}

static int conn_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        int r = 0;

        c->refs++;
        if (revents & EPOLLIN)
                r = conn_read(c);
        if (r >= 0 && !c->closed && (revents & EPOLLOUT))
                r = conn_flush(c);
        if (r >= 0 && !c->closed && (revents & (EPOLLHUP | EPOLLERR)) && !(revents & EPOLLIN))
                r = -ECONNRESET;
        if (r < 0 && !c->closed) {
                /* Requests in flight learn that nobody waits for them any more. */
                conn_close(c);
        }
        conn_unref(c);
        return 0;
}

/* Refuse a client with one error line it can show (best effort: the socket is fresh, its
 * buffer empty), then close. */
static void refuse(int fd, const char *code, const char *message) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (control_format_error(0, code, message, &line, &len) >= 0)
                (void) !send(fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static unsigned participant_conns_of_uid(Server *s, uid_t uid) {
        unsigned n = 0;
        for (Conn *o = s->conns; o; o = o->next)
                if (o->participant && o->cred.uid == uid)
                        n++;
        return n;
}

int server_accept(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Listener *l = userdata;
        Server *s = l->server;
        _cleanup_close_ int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return 0;
        if (s->n_conns >= CONN_MAX) {
                log_warning("refusing a client: %u connections already", s->n_conns);
                refuse(cfd, CONTROL_ERR_STATE, "seatd has too many clients connected: try again later");
                return 0;
        }
        /* The control socket keeps slots of its own: participants or a compromised seat-web
         * filling the shared cap must not lock the operator out (a reset, a release). */
        unsigned others = 0, facilitators = 0;
        for (Conn *o = s->conns; o; o = o->next) {
                others += o->participant || o->facilitator;
                facilitators += o->facilitator;
        }
        if ((l->participant || l->facilitator) && others >= CONN_MAX - CONN_RESERVED_CONTROL) {
                log_warning("refusing a client of the %s socket: %u participant and facilitator connections already",
                            l->participant ? "participant" : "facilitator", others);
                refuse(cfd, CONTROL_ERR_STATE, "seatd has too many clients connected: try again later");
                return 0;
        }
        if (l->facilitator && facilitators >= FACILITATOR_CONN_MAX) {
                log_warning("refusing a client of the facilitator socket: %u connections already", facilitators);
                refuse(cfd, CONTROL_ERR_STATE, "the facilitator socket has too many clients connected: close one");
                return 0;
        }
        /* Refused before it is on the list, it is only this memory (and its reader, freed below). */
        _cleanup_free_ Conn *c = calloc(1, sizeof(*c));
        if (!c)
                return 0;
        socklen_t len = sizeof(c->cred);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0)
                return 0;
        if (l->participant && participant_conns_of_uid(s, c->cred.uid) >= (unsigned) s->config->participant_max_connections) {
                char msg[200];
                snprintf(msg, sizeof(msg), "uid %u already has %ld connections to the participant socket: close one",
                         (unsigned) c->cred.uid, s->config->participant_max_connections);
                log_warning("refusing a participant client pid %d: %s", (int) c->cred.pid, msg);
                refuse(cfd, CONTROL_ERR_STATE, msg);
                return 0;
        }
        c->reader = frame_reader_new(CONTROL_MAX_FRAME);
        if (!c->reader || event_add_io(s->loop, cfd, EPOLLIN, conn_io, c, &c->src) < 0) {
                frame_reader_free(c->reader);
                return 0;
        }
        c->server = s;
        c->fd = TAKE_FD(cfd);
        c->refs = 1;
        c->participant = l->participant;
        c->facilitator = l->facilitator; /* the kernel let it in: facilitator_group or root */
        /* On the participant socket nobody is an operator, root included: it serves the
         * token-scoped methods and nothing else, whoever connects. On the facilitator socket
         * everyone is a facilitator and nobody more, root included. */
        c->operator = !l->participant && !l->facilitator && peer_is_operator(s, c->fd, &c->cred);
        c->accepted_ms = c->active_ms = now_monotonic_ms();
        LIST_PREPEND(next, prev, s->conns, c);
        s->n_conns++;
        log_debug("client pid %d uid %u connected on the %s socket (%s)", (int) c->cred.pid, (unsigned) c->cred.uid,
                  c->participant ? "participant" : c->facilitator ? "facilitator" : "operator",
                  c->operator ? "operator" : c->facilitator ? "facilitator" : "not an operator");
        TAKE_PTR(c); /* the server's now */
        return 0;
}

/* A connection that never says hello, or a participant's that sits idle, holds a slot
 * of a cap every local user shares: close it, saying why. */
int server_sweep(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        uint64_t ticks;
        (void) !read(fd, &ticks, sizeof(ticks));
        int64_t now = now_monotonic_ms();
        for (Conn *c = s->conns, *next; c; c = next) {
                next = c->next;
                if (c->close_after_flush)
                        continue;
                const char *why = NULL;
                if (!c->hello && now - c->accepted_ms > HELLO_TIMEOUT_MS)
                        why = "no 'hello' within 10 seconds: closing the connection";
                else if (c->participant && c->hello && c->inflight == 0 &&
                         now - c->active_ms > s->config->participant_idle_timeout * 1000)
                        why = "idle for longer than participant_idle_timeout: closing the connection";
                if (!why)
                        continue;
                log_debug("client pid %d uid %u: %s", (int) c->cred.pid, (unsigned) c->cred.uid, why);
                c->refs++;
                c->close_after_flush = true;
                conn_send_error(c, 0, CONTROL_ERR_STATE, why);
                if (!c->closed && conn_update_events(c) < 0)
                        conn_close(c);
                conn_unref(c); /* held across the close; next was taken before it */
        }
        return 0;
}

/* ---- the server ---- */

int server_new(SeatConfig *config, EventLoop *loop, Server **ret, SeatError **ret_error) {
        _cleanup_(server_freep) Server *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->config = config;
        s->loop = loop;
        s->listeners[0] = (Listener) { .server = s, .path = config->socket_path, .fd = -EBADF };
        s->listeners[1] = (Listener) { .server = s, .path = config->participant_socket_path, .participant = true, .fd = -EBADF };
        s->listeners[2] = (Listener) { .server = s, .path = config->facilitator_socket_path, .facilitator = true, .fd = -EBADF };
        s->sweep_fd = -EBADF;
        s->mail_tail = &s->mail_head;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->jobs_done, NULL);
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0)
                return seat_error_set(ret_error, errno, "eventfd: %m");
        int r = event_add_io(loop, s->wake_fd, EPOLLIN, mail_drain, s, &s->wake_src);
        if (r < 0)
                return seat_error_set(ret_error, -r, "event loop: %s", strerror(-r));
        r = server_add_methods(s, builtin_methods, ELEMENTSOF(builtin_methods));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int server_add_methods(Server *s, const Method *methods, size_t n) {
        if (s->n_methods + n > METHODS_MAX)
                return -E2BIG;
        memcpy(s->methods + s->n_methods, methods, n * sizeof(Method));
        s->n_methods += n;
        return 0;
}

EventLoop *server_loop(Server *s) {
        return s->loop;
}

SeatConfig *server_config(Server *s) {
        return s->config;
}

void server_set_userdata(Server *s, void *userdata) {
        s->userdata = userdata;
}

void *server_userdata(Server *s) {
        return s->userdata;
}

void server_shutdown(Server *s) {
        s->shutting_down = true;
        for (Conn *c = s->conns; c; c = c->next)
                atomic_store(&c->gone, true); /* jobs see job_cancelled() */
        pthread_mutex_lock(&s->lock);
        while (s->jobs > 0)
                pthread_cond_wait(&s->jobs_done, &s->lock);
        pthread_mutex_unlock(&s->lock);
        mail_drain(s->wake_src, s->wake_fd, EPOLLIN, s);
}

Server *server_free(Server *s) {
        if (!s)
                return NULL;
        server_shutdown(s);
        while (s->conns) {
                conn_close(s->conns);
        }
        for (size_t i = 0; i < ELEMENTSOF(s->listeners); i++) {
                Listener *l = &s->listeners[i];
                l->src = event_source_free(l->src);
                if (l->fd >= 0) {
                        (void) unlink(l->path);
                        safe_close(l->fd);
                }
        }
        s->sweep_src = event_source_free(s->sweep_src);
        safe_close(s->sweep_fd);
        s->wake_src = event_source_free(s->wake_src);
        safe_close(s->wake_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->jobs_done);
        return mfree(s);
}
