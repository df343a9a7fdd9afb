/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* agent-mux.c: the agent's frames, checked, and sorted by id among the handles that wait
 * for them (see agent-client-internal.h). */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent-client-internal.h"
#include "common/fileio.h"
#include "common/log.h"

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF): json-c's check
 * answers only yes or no, and an operator should read which rule a guest broke. */
static bool utf8_valid(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *) s, *end = p + len;
        while (p < end) {
                unsigned char b = *p;
                size_t n;
                uint32_t cp;
                if (b < 0x80) {
                        p++;
                        continue;
                }
                if (b >= 0xc2 && b <= 0xdf)
                        n = 1, cp = b & 0x1f;
                else if (b >= 0xe0 && b <= 0xef)
                        n = 2, cp = b & 0x0f;
                else if (b >= 0xf0 && b <= 0xf4)
                        n = 3, cp = b & 0x07;
                else
                        return false;
                if ((size_t) (end - p) <= n)
                        return false;
                for (size_t i = 1; i <= n; i++) {
                        if ((p[i] & 0xc0) != 0x80)
                                return false;
                        cp = (cp << 6) | (p[i] & 0x3f);
                }
                if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
                        return false;
                p += n + 1;
        }
        return true;
}

/* -EPROTO with why, for agent_client_violation(). */
static int violation(AgentConn *k, AgentViolation kind, const char *fmt, ...) _printf_(3, 4);
static int violation(AgentConn *k, AgentViolation kind, const char *fmt, ...) {
        va_list ap;
        k->violation_kind = kind;
        va_start(ap, fmt);
        (void) vsnprintf(k->violation, sizeof(k->violation), fmt, ap);
        va_end(ap);
        log_debug("agent broke the protocol: %s", k->violation);
        return -EPROTO;
}

int agent_conn_parse_next(AgentConn *k, AgentMsg **ret) {
        const char *frame;
        size_t len;
        int r = frame_reader_next(k->reader, &frame, &len);
        if (r == -E2BIG)
                return violation(k, VIOLATION_OVERSIZE, "a frame over the %zu-byte cap", k->max_frame);
        if (r <= 0)
                return r;
        AgentParseError err;
        r = agent_msg_parse(frame, len, ret, &err);
        if (r < 0) {
                /* Its start, escaped: the operator sees what the guest sent. */
                _cleanup_free_ char *head = log_escape(frame, MIN(len, (size_t) 48), 64);
                /* err.message is the codec's own text, never the guest's. */
                const char *what = !utf8_valid(frame, len) ? "is not valid UTF-8"
                                   : strstr(err.message, "not one JSON object") ? "is malformed JSON (not one JSON object)"
                                   : NULL;
                return violation(k, VIOLATION_BAD_FRAME, "a frame that %s%s ('%s')", what ? what : "breaks the codec's rules: ",
                                 what ? "" : err.message, head ? head : "?");
        }
        if (agent_msg_type_is_request((*ret)->type) && (*ret)->type != AGENT_MSG_HELLO) {
                AgentMsgType t = (*ret)->type;
                *ret = agent_msg_free(*ret);
                /* an agent sends replies only */
                return violation(k, VIOLATION_REQUEST, "a '%s' request, which an agent never sends",
                                 agent_msg_type_to_string(t));
        }
        return 1;
}

static void wake(AgentClient *c) {
        uint64_t one = 1;
        (void) !write(c->efd, &one, sizeof(one));
}

int agent_mux_route_add(AgentConn *k, int64_t id, AgentClient *c) {
        if (k->n_routes == k->allocated_routes) {
                size_t n = MAX(k->allocated_routes * 2, (size_t) 16);
                AgentRoute *r = realloc(k->routes, n * sizeof(*r));
                if (!r)
                        return -ENOMEM;
                k->routes = r;
                k->allocated_routes = n;
        }
        k->routes[k->n_routes++] = (AgentRoute) { .id = id, .to = c };
        return 0;
}

static void route_remove_at(AgentConn *k, size_t i) {
        k->routes[i] = k->routes[--k->n_routes];
}

/* The last frame a request gets: its route ends with it, and a second one for the same id
 * is a violation like any frame for an id nobody asked for. */
static bool final_reply(const AgentMsg *m) {
        return m->type != AGENT_MSG_STARTED && m->type != AGENT_MSG_OUTPUT;
}

/* Under k->lock: hand m to whoever waits for its id, waiting while that handle holds a
 * full queue. -EPROTO for an id nobody waits for; -ECANCELED when stopping. */
static int deliver(AgentConn *k, AgentMsg *m, size_t bytes) {
        for (;;) {
                if (k->stopping)
                        return -ECANCELED;
                size_t i;
                for (i = 0; i < k->n_routes; i++)
                        if (k->routes[i].id == m->id)
                                break;
                if (i == k->n_routes)
                        return violation(k, VIOLATION_UNKNOWN_ID, "a '%s' for id %lld, which no request is waiting for",
                                         agent_msg_type_to_string(m->type), (long long) m->id);
                AgentClient *c = k->routes[i].to;
                if (c->queued >= AGENT_MUX_QUEUE_MAX) {
                        /* Its caller is slow: stop reading the channel until it catches up
                         * (the agent stops its tools when its own queue fills). */
                        pthread_cond_wait(&k->space, &k->lock);
                        continue; /* the handle may have gone meanwhile */
                }
                AgentQueued *q = malloc(sizeof(*q));
                if (!q)
                        return -ENOMEM;
                *q = (AgentQueued) { .msg = m, .bytes = bytes };
                *c->tail = q;
                c->tail = &q->next;
                c->queued += bytes;
                if (final_reply(m))
                        route_remove_at(k, i);
                wake(c);
                return 0;
        }
}

/* What a queued message holds, near enough: its payload and the rest of it. */
static size_t msg_bytes(const AgentMsg *m) {
        size_t payload = m->type == AGENT_MSG_OUTPUT ? m->output.len : m->type == AGENT_MSG_DATA ? m->data.len : 0;
        return 256 + payload;
}

static void end_all(AgentConn *k, int r) {
        pthread_mutex_lock(&k->lock);
        k->dead = r;
        for (size_t i = 0; i < k->n_routes; i++)
                wake(k->routes[i].to);
        pthread_mutex_unlock(&k->lock);
}

static void *reader_thread(void *p) {
        AgentConn *k = p;
        struct pollfd fds[2] = { { .fd = k->fd, .events = POLLIN }, { .fd = k->stop_fd, .events = POLLIN } };
        for (;;) {
                AgentMsg *m = NULL;
                int r = agent_conn_parse_next(k, &m);
                if (r > 0) {
                        pthread_mutex_lock(&k->lock);
                        r = deliver(k, m, msg_bytes(m));
                        pthread_mutex_unlock(&k->lock);
                        if (r < 0) {
                                agent_msg_free(m);
                                end_all(k, r == -ECANCELED ? -ECONNRESET : r);
                                return NULL;
                        }
                        continue;
                }
                if (r < 0) {
                        end_all(k, r);
                        return NULL;
                }
                if (k->eof) {
                        end_all(k, -ECONNRESET);
                        return NULL;
                }
                ssize_t n = frame_reader_fill(k->reader, k->fd);
                if (n == 0) {
                        k->eof = true;
                        continue;
                }
                if (n > 0)
                        continue;
                if (n != -EAGAIN) {
                        end_all(k, (int) n);
                        return NULL;
                }
                if (poll(fds, 2, -1) < 0 && errno != EINTR) {
                        end_all(k, negative_errno());
                        return NULL;
                }
                if (fds[1].revents) {
                        end_all(k, -ECONNRESET);
                        return NULL;
                }
        }
}

int agent_mux_start(AgentClient *c) {
        AgentConn *k = c->conn;
        if (__atomic_load_n(&k->mux, __ATOMIC_ACQUIRE))
                return 0;
        k->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (k->stop_fd < 0)
                return negative_errno();
        int r = -pthread_create(&k->reader_thread, NULL, reader_thread, k);
        if (r < 0) {
                k->stop_fd = safe_close(k->stop_fd);
                return r;
        }
        /* Under the lock for agent_client_next_id(), atomic for recv on other threads. */
        pthread_mutex_lock(&k->lock);
        __atomic_store_n(&k->mux, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&k->lock);
        return 0;
}

void agent_mux_stop(AgentConn *k) {
        if (!__atomic_load_n(&k->mux, __ATOMIC_ACQUIRE) || k->stop_fd < 0)
                return;
        pthread_mutex_lock(&k->lock);
        k->stopping = true;
        pthread_cond_broadcast(&k->space);
        pthread_mutex_unlock(&k->lock);
        uint64_t one = 1;
        (void) !write(k->stop_fd, &one, sizeof(one));
        (void) pthread_join(k->reader_thread, NULL);
        k->stop_fd = safe_close(k->stop_fd);
        /* mux stays set: other handles may be reading it in recv, and go on getting the
         * reader's end (dead) from their queues. */
}

static void queue_pop(AgentClient *c, AgentMsg **ret) {
        AgentQueued *q = c->head;
        c->head = q->next;
        if (!c->head)
                c->tail = &c->head;
        c->queued -= q->bytes;
        *ret = q->msg;
        free(q);
}

void agent_mux_forget(AgentClient *c) {
        AgentConn *k = c->conn;
        pthread_mutex_lock(&k->lock);
        for (size_t i = 0; i < k->n_routes;)
                if (k->routes[i].to == c)
                        route_remove_at(k, i);
                else
                        i++;
        while (c->head) {
                AgentMsg *m;
                queue_pop(c, &m);
                agent_msg_free(m);
        }
        pthread_cond_broadcast(&k->space);
        pthread_mutex_unlock(&k->lock);
}

static int remaining_ms(int64_t deadline) {
        int64_t left = deadline - now_monotonic_ms();
        return left <= 0 ? 0 : (int) MIN(left, (int64_t) INT32_MAX);
}

int agent_mux_recv(AgentClient *c, int timeout_ms, int wake_fd, AgentMsg **ret) {
        AgentConn *k = c->conn;
        int64_t deadline = now_monotonic_ms() + MAX(timeout_ms, 0);
        for (;;) {
                uint64_t n;
                /* Cleared before looking, so a frame queued after the look still wakes the poll. */
                (void) !read(c->efd, &n, sizeof(n));
                pthread_mutex_lock(&k->lock);
                if (c->head) {
                        queue_pop(c, ret);
                        pthread_cond_broadcast(&k->space);
                        pthread_mutex_unlock(&k->lock);
                        return 0;
                }
                /* What came before the end is delivered first: it is the agent's own. */
                int dead = k->dead;
                pthread_mutex_unlock(&k->lock);
                if (dead < 0)
                        return dead;
                struct pollfd p[2] = { { .fd = c->efd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
                int r = poll(p, wake_fd >= 0 ? 2 : 1, remaining_ms(deadline));
                if (r < 0 && errno != EINTR)
                        return negative_errno();
                if (r == 0)
                        return -ETIMEDOUT;
                if (r > 0 && p[0].revents == 0 && wake_fd >= 0 && p[1].revents)
                        return -EAGAIN;
        }
}
