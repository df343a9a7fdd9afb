/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>

#include "conf.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "server.h"

#define CONN_MAX 256
#define CONN_INFLIGHT_MAX 16
#define OUT_SOFT_CAP (4u << 20)  /* above it, progress events are dropped */
#define OUT_HARD_CAP (64u << 20) /* above it, the client is too slow: disconnect */
/* The participant socket is open to every local user: its caps are per uid, so one user
 * cannot take every connection slot or pin seatd's memory with unread output. */
#define PARTICIPANT_OUT_CAP (16u << 20)   /* all buffered output of one uid */
#define HELLO_TIMEOUT_MS 10000            /* a connection that says nothing is closed */
/* One read of at most this much per connection and wakeup: requests are parsed on the
 * event loop, beside tamper detection, so one client streaming lines (5000 one-line
 * errors cost ~12 ms here) cannot hold the loop. The loop is level-triggered: the rest is
 * read on the next round, after the other ready sources. */
#define CONN_READ_MAX (16u * 1024u)
#define SWEEP_INTERVAL_S 1
#define METHODS_MAX 64

typedef struct MailItem {
        Request *req;
        char *line;
        size_t len;
        bool final;
        bool job_end; /* the final reply of a job (not of a follow-up) */
        bool droppable;
        struct MailItem *next;
} MailItem;

struct Conn {
        Server *server;
        int fd;
        EventSource *src;
        FrameReader *reader;
        char *out;
        size_t out_len, out_cap;
        struct ucred cred;
        bool operator;
        bool participant;   /* came in on the participant socket: token-scoped methods only */
        int64_t accepted_ms, active_ms;
        bool hello;
        bool closed;        /* fd gone; memory kept while requests hold references */
        atomic_bool gone;   /* read by jobs: nobody waits for their replies any more */
        bool close_after_flush;
        unsigned refs;
        unsigned inflight;
        JobInbox *inboxes;  /* jobs on this connection that take follow-ups (loop thread) */
        Conn *prev, *next;
};

struct JobInbox {
        Request *owner;
        int fd;               /* eventfd: written when a follow-up is queued */
        Request *head, **tail; /* under the server's lock */
        bool closed;           /* under the server's lock */
        JobInbox *next;        /* in owner->conn->inboxes */
};

typedef struct Listener {
        Server *server;
        const char *path;
        bool participant;
        int fd;
        EventSource *src;
} Listener;

struct Server {
        SeatConfig *config;
        EventLoop *loop;
        Listener listeners[2]; /* the operator socket, the participant socket */
        int sweep_fd;          /* timerfd: hello and idle timeouts */
        EventSource *sweep_src;
        Conn *conns;
        unsigned n_conns;
        Method methods[METHODS_MAX];
        size_t n_methods;
        void *userdata;

        int wake_fd; /* eventfd: jobs post to the mailbox */
        EventSource *wake_src;
        pthread_mutex_t lock;
        pthread_cond_t jobs_done;
        MailItem *mail_head, **mail_tail;
        unsigned jobs;
        bool shutting_down;
};

static int hello_method(Request *req);

static const Method builtin_methods[] = {
        { "hello", hello_method, false },
};

/* ---- connections ---- */

static void conn_unref(Conn *c) {
        if (!c || --c->refs > 0)
                return;
        frame_reader_free(c->reader);
        free(c->out);
        free(c);
}

static void conn_close(Conn *c) {
        if (c->closed)
                return;
        c->closed = true;
        atomic_store(&c->gone, true);
        c->src = event_source_free(c->src);
        c->fd = safe_close(c->fd);
        Server *s = c->server;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
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

static int conn_queue(Conn *c, const char *line, size_t len, bool droppable) {
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

static void inbox_free(Request *req);

static Request *request_free(Request *req) {
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
        free(req);
        return NULL;
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
        int r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = control_format_error(req->id, code, message, &line, &len);
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
        json_object_object_add(o, "operator", json_object_new_boolean(req->operator));
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
        if (method->operator_only && c->participant) {
                char msg[PATH_MAX + 160];
                snprintf(msg, sizeof(msg),
                         "'%s' is not served on the participant socket (a seat's status, exec, cp and console "
                         "are): operators use '%s'", method->name, s->config->socket_path);
                return conn_send_error(c, m->id, CONTROL_ERR_DENIED, msg);
        }
        if (method->operator_only && !c->operator)
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
        req->operator = c->operator;
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

static int server_accept(EventSource *src, int fd, uint32_t revents, void *userdata) {
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
        Conn *c = calloc(1, sizeof(*c));
        if (!c)
                return 0;
        socklen_t len = sizeof(c->cred);
        if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0) {
                free(c);
                return 0;
        }
        if (l->participant && participant_conns_of_uid(s, c->cred.uid) >= (unsigned) s->config->participant_max_connections) {
                char msg[200];
                snprintf(msg, sizeof(msg), "uid %u already has %ld connections to the participant socket: close one",
                         (unsigned) c->cred.uid, s->config->participant_max_connections);
                log_warning("refusing a participant client pid %d: %s", (int) c->cred.pid, msg);
                refuse(cfd, CONTROL_ERR_STATE, msg);
                free(c);
                return 0;
        }
        c->reader = frame_reader_new(CONTROL_MAX_FRAME);
        if (!c->reader || event_add_io(s->loop, cfd, EPOLLIN, conn_io, c, &c->src) < 0) {
                frame_reader_free(c->reader);
                free(c);
                return 0;
        }
        c->server = s;
        c->fd = TAKE_FD(cfd);
        c->refs = 1;
        c->participant = l->participant;
        /* On the participant socket nobody is an operator, root included: it serves the
         * token-scoped methods and nothing else, whoever connects. */
        c->operator = !l->participant && peer_is_operator(s, c->fd, &c->cred);
        c->accepted_ms = c->active_ms = now_monotonic_ms();
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        log_debug("client pid %d uid %u connected on the %s socket (%s)", (int) c->cred.pid, (unsigned) c->cred.uid,
                  c->participant ? "participant" : "operator", c->operator ? "operator" : "not an operator");
        return 0;
}

/* A connection that never says hello, or a participant's that sits idle, holds a slot
 * of a cap every local user shares: close it, saying why. */
static int server_sweep(EventSource *src, int fd, uint32_t revents, void *userdata) {
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

/* ---- jobs ---- */

static void mail_post_item(Server *s, Request *req, char *line, size_t len, bool final, bool job_end, bool droppable) {
        MailItem *m = calloc(1, sizeof(*m));
        pthread_mutex_lock(&s->lock);
        if (m) {
                *m = (MailItem) { .req = req, .line = line, .len = len, .final = final, .job_end = job_end,
                                  .droppable = droppable };
                *s->mail_tail = m;
                s->mail_tail = &m->next;
        } else
                free(line); /* out of memory: a final reply is lost, the job still ends below */
        if (job_end)
                s->jobs--;
        pthread_cond_broadcast(&s->jobs_done);
        pthread_mutex_unlock(&s->lock);
        uint64_t one = 1;
        (void) !write(s->wake_fd, &one, sizeof(one));
}

static void mail_post(Server *s, Request *req, char *line, size_t len, bool final, bool droppable) {
        mail_post_item(s, req, line, len, final, final, droppable);
}

static int mail_drain(EventSource *src, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        uint64_t n;
        (void) !read(fd, &n, sizeof(n));

        pthread_mutex_lock(&s->lock);
        MailItem *m = s->mail_head;
        s->mail_head = NULL;
        s->mail_tail = &s->mail_head;
        pthread_mutex_unlock(&s->lock);

        while (m) {
                MailItem *next = m->next;
                if (m->line)
                        (void) conn_queue(m->req->conn, m->line, m->len, m->droppable);
                if (m->final)
                        request_free(m->req);
                free(m->line);
                free(m);
                m = next;
        }
        return 0;
}

static void *job_thread(void *p) {
        Request *req = p;
        Server *s = req->server;
        _cleanup_error_ SeatError *err = NULL;
        json_object *result = NULL;
        char *line = NULL;
        size_t len = 0;

        int r = req->job_fn(req, req->job_data, &result, &err);
        if (r >= 0)
                r = control_format_result(req->id, result, &line, &len);
        else
                r = control_format_error(req->id, seat_error_to_code(err),
                                         err ? err->message : strerror(-r), &line, &len);
        json_object_put(result);
        if (r < 0)
                (void) control_format_error(req->id, CONTROL_ERR_INTERNAL, "cannot format the reply", &line, &len);
        mail_post(s, req, line, len, true, false);
        return NULL;
}

int request_start_job(Request *req, JobFn fn, void *data, void (*free_data)(void *)) {
        Server *s = req->server;
        pthread_attr_t attr;
        pthread_t t;

        req->job_fn = fn;
        req->job_data = data;
        req->job_free = free_data;
        req->answered = true; /* the job answers */
        pthread_mutex_lock(&s->lock);
        s->jobs++;
        pthread_mutex_unlock(&s->lock);

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int r = -pthread_create(&t, &attr, job_thread, req);
        pthread_attr_destroy(&attr);
        if (r < 0) {
                pthread_mutex_lock(&s->lock);
                s->jobs--;
                pthread_mutex_unlock(&s->lock);
                req->answered = false;
                return request_reply_error(req, CONTROL_ERR_IO, "cannot start a worker: %s", strerror(-r));
        }
        return 0;
}

void job_progress(Request *req, const char *what, uint64_t done, uint64_t total) {
        int64_t now = now_monotonic_ms();
        if (done != total && now - req->progress_ms < 100)
                return;
        req->progress_ms = now;
        char *line = NULL;
        size_t len;
        if (control_format_progress(req->id, what, done, total, &line, &len) < 0)
                return;
        mail_post(req->server, req, line, len, false, true);
}

void job_event(Request *req, const char *type, json_object *body) {
        char *line = NULL;
        size_t len;
        if (control_format_event(req->id, type, body, &line, &len) < 0)
                return;
        mail_post(req->server, req, line, len, false, false);
}

bool job_cancelled(Request *req) {
        return atomic_load(&req->cancelled) || atomic_load(&req->conn->gone);
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

static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *q = p + 1; *q; q++) {
                if (*q != '/')
                        continue;
                *q = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *q = '/';
        }
        return 0;
}

/* The socket's owner and mode, on its temporary path: the operator socket to root and
 * the admin group (a missing group leaves it to root alone), the participant socket to
 * everyone. */
static int listener_own(Listener *l, const char *tmp) {
        if (!l->participant) {
                struct group *g = getgrnam(l->server->config->admin_group);
                if (!g)
                        log_warning("group '%s' (admin_group) does not exist: '%s' is root's alone", l->server->config->admin_group, l->path);
                else if (chown(tmp, 0, g->gr_gid) < 0)
                        log_warning("cannot give '%s' to group '%s': %m", l->path, l->server->config->admin_group);
        }
        if (chmod(tmp, l->participant ? 0666 : 0660) < 0)
                return negative_errno();
        return 0;
}

static int listener_open(Listener *l, SeatError **ret_error) {
        Server *s = l->server;
        const char *path = l->path;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "%s '%s' is too long",
                                      l->participant ? "participant_socket_path" : "socket_path", path);
        strcpy(sa.sun_path, path);
        int r = mkdir_parents(path, 0755);
        if (r < 0)
                return seat_error_set(ret_error, -r, "create the directory of '%s': %s", path, strerror(-r));

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return seat_error_set(ret_error, errno, "socket: %m");
        /* A socket left by a seatd that died: replace it, unless someone still listens. */
        if (lstat(path, &st) >= 0) {
                if (!S_ISSOCK(st.st_mode))
                        return seat_error_set(ret_error, EEXIST, "'%s' exists and is not a socket: remove it", path);
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *) &sa, sizeof(sa)) >= 0)
                        return seat_error_set(ret_error, EADDRINUSE, "another seatd is listening on '%s'", path);
                (void) unlink(path);
        }
        /* The operator socket: root and the admin group (0660). The participant socket:
         * every local user (0666); what a token opens is decided per request. seatd's
         * threads (adoption, sealing) are running by now, so the mode is not set through
         * the process-wide umask: the socket is bound under a temporary name, given its
         * owner and mode there, and renamed into place. Its final path never exists with
         * another mode; the temporary one is at most 0777 & ~umask, which lets nobody but
         * root connect (connect needs write permission) while the default 0022 holds. */
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.%d.tmp", path, (int) getpid()) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        struct sockaddr_un tsa = { .sun_family = AF_UNIX };
        if (strlen(tmp) >= sizeof(tsa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "%s '%s' is too long (seatd needs %zu more bytes for a temporary name)",
                                      l->participant ? "participant_socket_path" : "socket_path", path, strlen(tmp) - strlen(path));
        strcpy(tsa.sun_path, tmp);
        (void) unlink(tmp);
        if (bind(fd, (struct sockaddr *) &tsa, sizeof(tsa)) < 0)
                return seat_error_set(ret_error, errno, "bind '%s': %m", tmp);
        r = listener_own(l, tmp);
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return seat_error_set(ret_error, -r, "cannot put the socket '%s' in place: %s", path, strerror(-r));
        }
        if (listen(fd, 64) < 0)
                return seat_error_set(ret_error, errno, "listen on '%s': %m", path);
        r = event_add_io(s->loop, fd, EPOLLIN, server_accept, l, &l->src);
        if (r < 0)
                return seat_error_set(ret_error, -r, "event loop: %s", strerror(-r));
        l->fd = TAKE_FD(fd);
        return 0;
}

int server_listen(Server *s, SeatError **ret_error) {
        for (size_t i = 0; i < ELEMENTSOF(s->listeners); i++) {
                int r = listener_open(&s->listeners[i], ret_error);
                if (r < 0)
                        return r;
        }
        s->sweep_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->sweep_fd < 0)
                return seat_error_set(ret_error, errno, "timerfd: %m");
        struct itimerspec its = { .it_interval = { SWEEP_INTERVAL_S, 0 }, .it_value = { SWEEP_INTERVAL_S, 0 } };
        if (timerfd_settime(s->sweep_fd, 0, &its, NULL) < 0)
                return seat_error_set(ret_error, errno, "timerfd: %m");
        int r = event_add_io(s->loop, s->sweep_fd, EPOLLIN, server_sweep, s, &s->sweep_src);
        if (r < 0)
                return seat_error_set(ret_error, -r, "event loop: %s", strerror(-r));
        return 0;
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
        free(s);
        return NULL;
}

/* ---- follow-up requests ---- */

int request_open_inbox(Request *req) {
        JobInbox *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (b->fd < 0) {
                free(b);
                return -errno;
        }
        b->owner = req;
        b->tail = &b->head;
        b->next = req->conn->inboxes;
        req->conn->inboxes = b;
        req->inbox = b;
        return 0;
}

/* The owner's request ends (loop thread, its job has finished): whatever still waits in
 * its inbox is answered, and the inbox goes. */
static void inbox_free(Request *req) {
        JobInbox *b = req->inbox;
        if (!b)
                return;
        for (JobInbox **p = &req->conn->inboxes; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        req->inbox = NULL;
        pthread_mutex_lock(&req->server->lock);
        Request *f = b->head;
        b->head = NULL;
        b->closed = true;
        pthread_mutex_unlock(&req->server->lock);
        while (f) {
                Request *next = f->inbox_next;
                f->inbox_next = NULL;
                (void) request_reply_error(f, CONTROL_ERR_STATE, "request %lld has ended: this was not delivered",
                                           (long long) req->id);
                f = next;
        }
        safe_close(b->fd);
        free(b);
}

int request_forward(Request *follow, int64_t target) {
        JobInbox *b = NULL;
        for (JobInbox *i = follow->conn->inboxes; i; i = i->next)
                if (i->owner->id == target) {
                        b = i;
                        break;
                }
        if (!b)
                return request_reply_error(follow, CONTROL_ERR_NOT_FOUND,
                                           "no request %lld taking input on this connection (see seat.exec 'stdin_live')",
                                           (long long) target);
        Server *s = follow->server;
        pthread_mutex_lock(&s->lock);
        bool closed = b->closed;
        if (!closed) {
                follow->answered = true; /* the job answers */
                follow->inbox_next = NULL;
                *b->tail = follow;
                b->tail = &follow->inbox_next;
        }
        pthread_mutex_unlock(&s->lock);
        if (closed)
                return request_reply_error(follow, CONTROL_ERR_STATE, "request %lld has ended: this was not delivered",
                                           (long long) target);
        uint64_t one = 1;
        (void) !write(b->fd, &one, sizeof(one));
        return 0;
}

int job_inbox_fd(Request *req) {
        return req->inbox ? req->inbox->fd : -EBADF;
}

Request *job_inbox_pop(Request *req) {
        JobInbox *b = req->inbox;
        uint64_t n;
        if (!b)
                return NULL;
        (void) !read(b->fd, &n, sizeof(n)); /* before looking: a later push writes again */
        pthread_mutex_lock(&req->server->lock);
        Request *f = b->head;
        if (f) {
                b->head = f->inbox_next;
                if (!b->head)
                        b->tail = &b->head;
                f->inbox_next = NULL;
        }
        pthread_mutex_unlock(&req->server->lock);
        return f;
}

void job_inbox_close(Request *req) {
        if (!req->inbox)
                return;
        pthread_mutex_lock(&req->server->lock);
        req->inbox->closed = true;
        pthread_mutex_unlock(&req->server->lock);
}

void job_reply(Request *follow, json_object *result) {
        char *line = NULL;
        size_t len = 0;
        _cleanup_json_ json_object *o = result ? result : json_object_new_object();
        if (!o || control_format_result(follow->id, o, &line, &len) < 0)
                (void) control_format_error(follow->id, CONTROL_ERR_INTERNAL, "cannot format the reply", &line, &len);
        mail_post_item(follow->server, follow, line, len, true, false, false);
}

void job_reply_error(Request *follow, const char *code, const char *fmt, ...) {
        _cleanup_free_ char *message = NULL;
        char *line = NULL;
        size_t len = 0;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r < 0)
                message = NULL;
        (void) control_format_error(follow->id, code, message ? message : "failed", &line, &len);
        mail_post_item(follow->server, follow, line, len, true, false, false);
}
