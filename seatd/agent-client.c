/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include <pthread.h>
#include <sys/eventfd.h>

#include "agent-client-internal.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"

static AgentConn *conn_unref(AgentConn *k) {
        if (!k)
                return NULL;
        pthread_mutex_lock(&k->lock);
        bool last = --k->refs == 0;
        pthread_mutex_unlock(&k->lock);
        if (!last)
                return NULL;
        safe_close(k->fd);
        frame_reader_free(k->reader);
        strv_free(k->capabilities);
        pthread_cond_destroy(&k->space);
        pthread_mutex_destroy(&k->send_lock);
        pthread_mutex_destroy(&k->lock);
        FREE_MANY(k->agent_name, k->routes, k);
        return NULL;
}

/* A handle on k (which it references). */
static int handle_new(AgentConn *k, bool first, AgentClient **ret) {
        _cleanup_free_ AgentClient *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->efd < 0)
                return negative_errno();
        c->conn = k;
        c->first = first;
        c->tail = &c->head;
        pthread_mutex_lock(&k->lock);
        k->refs++;
        pthread_mutex_unlock(&k->lock);
        *ret = TAKE_PTR(c);
        return 0;
}

int agent_client_new_fd(int fd, size_t max_frame, AgentClient **ret) {
        if (fd < 0 || max_frame < AGENT_MAX_FRAME_MIN)
                return -EINVAL;
        int r = fd_set_nonblock(fd, 1);
        if (r >= 0)
                r = fd_set_cloexec(fd, 1);
        if (r < 0)
                return r;
        AgentConn *k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        k->reader = frame_reader_new(max_frame);
        if (!k->reader) {
                free(k);
                return -ENOMEM;
        }
        pthread_mutex_init(&k->lock, NULL);
        pthread_mutex_init(&k->send_lock, NULL);
        pthread_cond_init(&k->space, NULL);
        k->fd = -EBADF;
        k->stop_fd = -EBADF;
        k->max_frame = max_frame;
        k->next_id = 1;
        r = handle_new(k, true, ret);
        if (r < 0) {
                k->refs = 1;
                conn_unref(k);
                return r;
        }
        k->fd = fd; /* the caller's until here */
        return 0;
}

void agent_client_set_single(AgentClient *c) {
        c->conn->single = true;
}

int agent_client_open(AgentClient *c, AgentClient **ret) {
        return handle_new(c->conn, false, ret);
}

AgentClient *agent_client_free(AgentClient *c) {
        if (!c)
                return NULL;
        AgentConn *k = c->conn;
        if (c->first) {
                /* The channel ends with the handle it was made with. Shut, not closed: other
                 * handles may still be sending on the fd, which must not become another file. */
                (void) shutdown(k->fd, SHUT_RDWR);
                agent_mux_stop(k);
        }
        agent_mux_forget(c);
        safe_close(c->efd);
        free(c);
        conn_unref(k);
        return NULL;
}

int64_t agent_client_next_id(AgentClient *c) {
        AgentConn *k = c->conn;
        pthread_mutex_lock(&k->lock);
        int64_t id = k->next_id++;
        /* Under the mux its replies come to this handle. Without memory for the route they
         * would be for nobody, which ends the connection: a request then fails, not hangs. */
        if (k->mux) /* (set under this lock too) */
                (void) agent_mux_route_add(k, id, c);
        pthread_mutex_unlock(&k->lock);
        return id;
}

static int remaining_ms(int64_t deadline) {
        int64_t left = deadline - now_monotonic_ms();
        return left <= 0 ? 0 : (int) MIN(left, (int64_t) INT32_MAX);
}

static int64_t deadline_in(int timeout_ms) {
        return now_monotonic_ms() + (timeout_ms < 0 ? 0 : timeout_ms);
}

int agent_client_connect_unix(const char *path, int timeout_ms, AgentClient **ret, SeatError **ret_error) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int64_t deadline = deadline_in(timeout_ms);
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "agent socket path '%s' is too long", path);
        strcpy(sa.sun_path, path);

        for (;;) {
                _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return seat_error_set(ret_error, errno, "create socket: %m");
                if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) >= 0) {
                        r = agent_client_new_fd(fd, AGENT_MAX_FRAME_DEFAULT, ret);
                        if (r < 0)
                                return seat_error_set(ret_error, -r, "set up agent client: %s", strerror(-r));
                        TAKE_FD(fd);
                        return 0;
                }
                r = errno;
                if ((r != ENOENT && r != ECONNREFUSED) || remaining_ms(deadline) == 0)
                        return seat_error_set(ret_error, r, "connect to agent socket '%s': %s", path, strerror(r));
                (void) nanosleep(&(struct timespec) { .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
}

/* Wait for fd; -EAGAIN when wake_fd (if >= 0) became readable first. */
static int wait_fd_or(int fd, short events, int wake_fd, int64_t deadline) {
        struct pollfd p[2] = { { .fd = fd, .events = events }, { .fd = wake_fd, .events = POLLIN } };
        for (;;) {
                int n = poll(p, wake_fd >= 0 ? 2 : 1, remaining_ms(deadline));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -ETIMEDOUT;
                if (p[0].revents == 0 && wake_fd >= 0 && p[1].revents)
                        return -EAGAIN;
                return 0;
        }
}

static int wait_fd(int fd, short events, int64_t deadline) {
        return wait_fd_or(fd, events, -EBADF, deadline);
}

/* Every byte of buf, or an error; *sent says how far it got. */
static int send_all(int fd, const char *p, size_t len, int64_t deadline, size_t *sent) {
        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return negative_errno();
                        int r = wait_fd(fd, POLLOUT, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                p += n;
                len -= (size_t) n;
                *sent += (size_t) n;
        }
        return 0;
}

/* One frame's send, at most, whatever the call's own deadline (an exec's is its whole
 * timeout, an hour by default): a guest that stops reading its channel fills the socket,
 * and a send blocked on it holds send_lock and the seat's call count, so reset and release
 * (which wait for the calls to leave) would wait as long. Generous for a slow TCG guest:
 * a frame is at most max_frame bytes, and the wait for send_lock counts too. */
#define AGENT_SEND_MAX_MS 30000

int agent_client_send_raw(AgentClient *c, const void *buf, size_t len, int timeout_ms) {
        AgentConn *k = c->conn;
        int64_t deadline = deadline_in(MIN(timeout_ms, AGENT_SEND_MAX_MS));
        size_t sent = 0;

        /* Frames of concurrent handles go whole, one after the other; the wait for the
         * channel counts against this send's own timeout. (pthread_mutex_timedlock()
         * takes the realtime clock; ThreadSanitizer does not know the monotonic
         * pthread_mutex_clocklock().) */
        struct timespec until;
        (void) clock_gettime(CLOCK_REALTIME, &until);
        int64_t ns = until.tv_nsec + (int64_t) remaining_ms(deadline) * 1000000;
        until.tv_sec += ns / 1000000000;
        until.tv_nsec = ns % 1000000000;
        int r = -pthread_mutex_timedlock(&k->send_lock, &until);
        if (r < 0)
                return r;
        if (k->wire_cut)
                r = -EPIPE;
        else
                r = send_all(k->fd, buf, len, deadline, &sent);
        /* Half a frame on the channel: whatever follows would be read as its rest. */
        if (r < 0 && sent > 0)
                k->wire_cut = true;
        pthread_mutex_unlock(&k->send_lock);
        return r;
}

int agent_client_send(AgentClient *c, const AgentMsg *m, int timeout_ms) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = agent_msg_format(m, c->conn->max_frame, &line, &len);
        if (r < 0)
                return r;
        return agent_client_send_raw(c, line, len, timeout_ms);
}

const char *agent_client_violation(const AgentClient *c) {
        return c->conn->violation[0] ? c->conn->violation : "a bad frame";
}

static int recv_or(AgentClient *c, int timeout_ms, int wake_fd, AgentMsg **ret) {
        AgentConn *k = c->conn;
        int64_t deadline = deadline_in(timeout_ms);

        /* Set once by the first hello, never cleared: read from any handle's thread. */
        if (__atomic_load_n(&k->mux, __ATOMIC_ACQUIRE))
                return agent_mux_recv(c, timeout_ms, wake_fd, ret);
        for (;;) {
                int r = agent_conn_parse_next(k, ret);
                if (r != 0)
                        return r < 0 ? r : 0;
                if (k->eof)
                        return -ECONNRESET;

                ssize_t n = frame_reader_fill(k->reader, k->fd);
                if (n == 0) {
                        k->eof = true;
                        continue;
                }
                if (n == -EAGAIN) {
                        r = wait_fd_or(k->fd, POLLIN, wake_fd, deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n < 0)
                        return (int) n;
        }
}

int agent_client_recv(AgentClient *c, int timeout_ms, AgentMsg **ret) {
        return recv_or(c, timeout_ms, -EBADF, ret);
}

int agent_client_recv_or_wake(AgentClient *c, int timeout_ms, int wake_fd, AgentMsg **ret) {
        return recv_or(c, timeout_ms, wake_fd, ret);
}

static int error_reply(const AgentMsg *m, SeatError **ret_error) {
        _cleanup_free_ char *msg = log_escape(m->error.message ? m->error.message : "", m->error.message ? strlen(m->error.message) : 0, 512);
        _cleanup_free_ char *code = log_escape(m->error.code, strlen(m->error.code), 64);
        return seat_error_set(ret_error, EREMOTEIO, "agent refused request %lld: %s: %s", (long long) m->id,
                              code ? code : "?", msg ? msg : "?");
}

/* The next message for id; anything for another id is a protocol violation here. */
static int recv_for(AgentClient *c, int64_t id, int64_t deadline, AgentMsg **ret, SeatError **ret_error) {
        _cleanup_agent_msg_ AgentMsg *m = NULL;
        int r = agent_client_recv(c, remaining_ms(deadline), &m);
        if (r == -ETIMEDOUT)
                return seat_error_set(ret_error, ETIMEDOUT, "agent did not answer request %lld in time", (long long) id);
        if (r == -EPROTO)
                return seat_error_set(ret_error, EPROTO, "agent broke the protocol (bad or oversized frame): it sent %s",
                                      agent_client_violation(c));
        if (r < 0)
                return seat_error_set(ret_error, -r, "read from agent: %s", strerror(-r));
        if (m->id != id)
                return seat_error_set(ret_error, EPROTO, "agent answered id %lld while request %lld was pending",
                                      (long long) m->id, (long long) id);
        *ret = TAKE_PTR(m);
        return 0;
}

/* The one reply that ends each request agent_client_call() makes (beside error), or
 * _AGENT_MSG_MAX for any. An agent that answered configure or shutdown with "started" was
 * taken at its word, and its stream for that id then piled up where nobody reads. */
static AgentMsgType call_reply_type(AgentMsgType request) {
        switch (request) {
        case AGENT_MSG_PING:
                return AGENT_MSG_PONG;
        case AGENT_MSG_FILE_GET:
                return AGENT_MSG_DATA;
        case AGENT_MSG_CONFIGURE:
        case AGENT_MSG_FILE_PUT:
        case AGENT_MSG_SHUTDOWN:
        case AGENT_MSG_KILL:
        case AGENT_MSG_STDIN:
        case AGENT_MSG_RESIZE:
                return AGENT_MSG_OK;
        default:
                return _AGENT_MSG_MAX;
        }
}

int agent_client_call(AgentClient *c, AgentMsg *req, int timeout_ms, AgentMsg **ret_reply, SeatError **ret_error) {
        int64_t deadline = deadline_in(timeout_ms);
        _cleanup_agent_msg_ AgentMsg *m = NULL;

        if (req->type == AGENT_MSG_EXEC)
                return seat_error_set(ret_error, EINVAL, "use agent_client_exec() for exec");
        req->id = agent_client_next_id(c);
        int r = agent_client_send(c, req, remaining_ms(deadline));
        if (r < 0)
                return seat_error_set(ret_error, -r, "send %s to agent: %s", agent_msg_type_to_string(req->type), strerror(-r));
        r = recv_for(c, req->id, deadline, &m, ret_error);
        if (r < 0)
                return r;
        if (m->type == AGENT_MSG_ERROR)
                return error_reply(m, ret_error);
        AgentMsgType want = call_reply_type(req->type);
        if (want != _AGENT_MSG_MAX && m->type != want)
                return seat_error_set(ret_error, EPROTO, "agent answered %s %lld with '%s'", agent_msg_type_to_string(req->type),
                                      (long long) req->id, agent_msg_type_to_string(m->type));
        if (ret_reply)
                *ret_reply = TAKE_PTR(m);
        return 0;
}

/* The reply to hello id. fresh: the machine has just booted (or been restored) and
 * nothing but that reply can be in the channel, so every frame that is not it proves the
 * agent broken and fails at once, naming what it sent; only silence waits for the
 * deadline (a slow boot). Otherwise (a new connection to a running agent), the channel may
 * still deliver what the agent wrote to the previous connection: the tail of a frame cut
 * by the reconnect (only the first frame can be one) and whole replies for other ids (a
 * bounded number) are dropped. An over-cap frame or a request is never stale: no agent
 * writes one, and a cut tail is shorter than the frame it was cut from. */
static int recv_hello_reply(AgentClient *c, int64_t id, bool fresh, int64_t deadline, AgentMsg **ret,
                            SeatError **ret_error) {
        for (unsigned frames = 0; frames < 4096; frames++) {
                _cleanup_agent_msg_ AgentMsg *m = NULL;
                int r = agent_client_recv(c, remaining_ms(deadline), &m);
                if (r == -ETIMEDOUT)
                        return seat_error_set(ret_error, ETIMEDOUT, "agent did not answer hello in time");
                if (r == -EPROTO && !fresh && frames == 0 && c->conn->violation_kind == VIOLATION_BAD_FRAME)
                        continue; /* the tail of a frame cut by the reconnect */
                if (r == -EPROTO)
                        return seat_error_set(ret_error, EPROTO, "agent broke the protocol before answering hello: it sent %s",
                                              agent_client_violation(c));
                if (r < 0)
                        return seat_error_set(ret_error, -r, "read from agent: %s", strerror(-r));
                if (m->id == id) {
                        *ret = TAKE_PTR(m);
                        return 0;
                }
                if (fresh)
                        return seat_error_set(ret_error, EPROTO,
                                              "agent broke the protocol before answering hello: it sent a '%s' for id %lld, "
                                              "which seatd never asked for (hello is id %lld)",
                                              agent_msg_type_to_string(m->type), (long long) m->id, (long long) id);
        }
        return seat_error_set(ret_error, EPROTO, "agent sent too many frames before answering hello");
}

static int strv_copy(char **l, char ***ret) {
        size_t n = 0;
        while (l[n])
                n++;
        _cleanup_strv_free_ char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(c[i] = strdup(l[i])))
                        return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

static int hello(AgentClient *c, bool fresh, int timeout_ms, AgentMsg **ret_hello, SeatError **ret_error) {
        int64_t deadline = deadline_in(timeout_ms);
        _cleanup_agent_msg_ AgentMsg *reply = NULL;
        if (__atomic_load_n(&c->conn->mux, __ATOMIC_ACQUIRE))
                return seat_error_set(ret_error, EBUSY, "hello again on an agent connection in use");
        AgentMsg req = { .type = AGENT_MSG_HELLO, .id = agent_client_next_id(c),
                         .hello = { .version = AGENT_PROTO_VERSION } };

        int r = agent_client_send(c, &req, remaining_ms(deadline));
        if (r < 0)
                return seat_error_set(ret_error, -r, "send hello to agent: %s", strerror(-r));
        r = recv_hello_reply(c, req.id, fresh, deadline, &reply, ret_error);
        if (r < 0)
                return r;
        if (reply->type == AGENT_MSG_ERROR)
                return error_reply(reply, ret_error);
        if (reply->type != AGENT_MSG_HELLO || !reply->hello.agent)
                return seat_error_set(ret_error, EPROTO, "agent answered hello with '%s'", agent_msg_type_to_string(reply->type));
        if (reply->hello.version != AGENT_PROTO_VERSION)
                return seat_error_set(ret_error, EPROTONOSUPPORT, "agent speaks protocol version %lld, seatd speaks %d",
                                      (long long) reply->hello.version, AGENT_PROTO_VERSION);
        AgentConn *k = c->conn;
        strv_free(k->capabilities);
        k->capabilities = NULL;
        if (reply->hello.capabilities && strv_copy(reply->hello.capabilities, &k->capabilities) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        free(k->agent_name);
        k->agent_name = log_escape(reply->hello.agent, strlen(reply->hello.agent), 128);
        /* What the agent says its default cap is, within bounds seatd sets: the guest says
         * it, and seatd holds every exec to it (agent_client_exec_live()). */
        k->max_output = reply->hello.max_output > 0 ? (uint64_t) MIN(reply->hello.max_output, (int64_t) AGENT_EXEC_OUTPUT_HOST_MAX)
                                                    : AGENT_EXEC_OUTPUT_DEFAULT;
        /* From here on requests may run side by side: a reader thread sorts the replies. */
        r = k->single ? 0 : agent_mux_start(c);
        if (r < 0)
                return seat_error_set(ret_error, -r, "start reading the agent channel: %s", strerror(-r));
        if (ret_hello)
                *ret_hello = TAKE_PTR(reply);
        return 0;
}

bool agent_client_has_capability(const AgentClient *c, const char *cap) {
        for (char **i = c->conn->capabilities; i && *i; i++)
                if (!strcmp(*i, cap))
                        return true;
        return false;
}

const char *agent_client_agent_name(const AgentClient *c) {
        return c->conn->agent_name ? c->conn->agent_name : "an agent";
}

int agent_client_hello(AgentClient *c, int timeout_ms, AgentMsg **ret_hello, SeatError **ret_error) {
        return hello(c, false, timeout_ms, ret_hello, ret_error);
}

int agent_client_hello_fresh(AgentClient *c, int timeout_ms, AgentMsg **ret_hello, SeatError **ret_error) {
        return hello(c, true, timeout_ms, ret_hello, ret_error);
}

int agent_client_ping(AgentClient *c, int timeout_ms, SeatError **ret_error) {
        _cleanup_agent_msg_ AgentMsg *reply = NULL;
        AgentMsg req = { .type = AGENT_MSG_PING };
        int r = agent_client_call(c, &req, timeout_ms, &reply, ret_error);
        if (r < 0)
                return r;
        if (reply->type != AGENT_MSG_PONG)
                return seat_error_set(ret_error, EPROTO, "agent answered ping with '%s'", agent_msg_type_to_string(reply->type));
        return 0;
}

void agent_exec_result_done(AgentExecResult *r) {
        free(r->error);
        *r = (AgentExecResult) {};
}

static int exec_fill_result(const AgentMsg *m, AgentExecResult *res) {
        res->code = m->exit.code;
        res->signal = m->exit.signal;
        res->duration_ms = m->exit.duration_ms;
        res->timed_out = m->exit.timed_out;
        res->truncated = m->exit.truncated;
        res->stdout_bytes = m->exit.stdout_bytes;
        res->stderr_bytes = m->exit.stderr_bytes;
        if (m->exit.error) {
                res->error = log_escape(m->exit.error, strlen(m->exit.error), 512);
                if (!res->error)
                        return -ENOMEM;
        }
        return 0;
}

/* How long a killed exec may take to report its exit: the agent kills the group, drains
 * its pipes (≤ 1 s) and answers. A reset or release waits this long at most for it. */
#define EXEC_KILL_DRAIN_MS 5000

/* Cancel a running exec: SIGKILL to its whole process group in the guest. Its remaining
 * frames are then read and dropped up to its exit, so the channel stays in step. */
static int exec_start_kill(AgentClient *c, int64_t exec_id, int64_t *ret_kill_id, int64_t *deadline) {
        AgentMsg k = { .type = AGENT_MSG_KILL, .id = agent_client_next_id(c), .kill = { .exec = exec_id, .signal = 9 } };
        *ret_kill_id = k.id;
        *deadline = MIN(*deadline, now_monotonic_ms() + EXEC_KILL_DRAIN_MS);
        return agent_client_send(c, &k, 2000);
}

static int exec_recv_or(AgentClient *c, int64_t deadline, bool poll_cancel, int wake_fd, AgentMsg **ret,
                        SeatError **ret_error) {
        int slice = remaining_ms(deadline);
        if (poll_cancel)
                slice = MIN(slice, 250);
        int r = recv_or(c, slice, wake_fd, ret);
        if (r == -EAGAIN)
                return -EAGAIN; /* live input arrived: take it, then wait again */
        if (r == -ETIMEDOUT && remaining_ms(deadline) > 0)
                return -EAGAIN; /* a slice ended: look at cancellation, then wait again */
        if (r == -ETIMEDOUT)
                return seat_error_set(ret_error, ETIMEDOUT, "agent did not finish the command in time");
        if (r == -EPROTO)
                return seat_error_set(ret_error, EPROTO, "agent broke the protocol (bad or oversized frame): it sent %s",
                                      agent_client_violation(c));
        if (r < 0)
                return seat_error_set(ret_error, -r, "read from agent: %s", strerror(-r));
        return 0;
}

static int exec_recv(AgentClient *c, int64_t deadline, bool poll_cancel, AgentMsg **ret, SeatError **ret_error) {
        return exec_recv_or(c, deadline, poll_cancel, -EBADF, ret, ret_error);
}

/* A kill crosses the exec's end on the channel: its reply still comes after the exec's last
 * frame, and is read here rather than left for the next call to trip over. */
static int exec_recv_kill_reply(AgentClient *c, int64_t kill_id, int64_t deadline, SeatError **ret_error) {
        _cleanup_agent_msg_ AgentMsg *m = NULL;
        _cleanup_error_ SeatError *err = NULL;
        int r;
        while ((r = exec_recv(c, deadline, false, &m, &err)) == -EAGAIN)
                ;
        if (r >= 0 && m->id != kill_id)
                r = seat_error_set(&err, EPROTO, "agent answered id %lld while kill %lld was pending", (long long) m->id,
                                   (long long) kill_id);
        if (r < 0 && ret_error) {
                seat_error_free(*ret_error);
                *ret_error = TAKE_PTR(err);
        }
        return r;
}

/* One live input to the agent: the next the caller has, if any. */
static int exec_input_send(AgentClient *c, const AgentExecInput *input, void *userdata, int64_t exec_id, int64_t deadline,
                           int64_t *ret_id, void **ret_token) {
        AgentMsg m = {};
        void *token = NULL;
        int r = input->next(userdata, &m, &token);
        if (r <= 0)
                return r;
        m.id = agent_client_next_id(c);
        switch (m.type) {
        case AGENT_MSG_STDIN:
                m.stdin_msg.exec = exec_id;
                break;
        case AGENT_MSG_RESIZE:
                m.resize.exec = exec_id;
                break;
        case AGENT_MSG_KILL:
                m.kill.exec = exec_id;
                break;
        default:
                input->done(userdata, token, "invalid", "not a live input");
                return 0;
        }
        r = agent_client_send(c, &m, remaining_ms(deadline));
        if (r < 0) {
                input->done(userdata, token, "io", "cannot send it to the agent");
                return r;
        }
        *ret_id = m.id;
        *ret_token = token;
        return 1;
}

static void exec_input_answer(const AgentExecInput *input, void *userdata, void **token, const AgentMsg *m) {
        if (!*token)
                return;
        if (!m)
                input->done(userdata, *token, "cancelled", "the command ended before the agent answered");
        else if (m->type == AGENT_MSG_ERROR) {
                _cleanup_free_ char *code = log_escape(m->error.code, strlen(m->error.code), 64);
                _cleanup_free_ char *msg = log_escape(m->error.message ? m->error.message : "",
                                                      m->error.message ? strlen(m->error.message) : 0, 512);
                input->done(userdata, *token, code ? code : "io", msg ? msg : "?");
        } else
                input->done(userdata, *token, NULL, NULL);
        *token = NULL;
}

int agent_client_exec_cancellable(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, bool (*cancelled)(void *),
                                  void *userdata, int timeout_ms, AgentExecResult *ret, SeatError **ret_error) {
        return agent_client_exec_live(c, req, on_output, cancelled, NULL, userdata, timeout_ms, ret, ret_error);
}

int agent_client_exec_live(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, bool (*cancelled)(void *),
                           const AgentExecInput *input, void *userdata, int timeout_ms, AgentExecResult *ret,
                           SeatError **ret_error) {
        int64_t deadline = deadline_in(timeout_ms), kill_id = 0, input_id = 0;
        void *input_token = NULL;
        AgentExecResult res = {};
        bool started = false, killing = false, kill_answered = false, cut = false;
        /* The output cap, held here too: a replaced agent may ignore max_output and stream
         * without end, and its own "truncated" is only its word. */
        uint64_t out_cap = req->exec.max_output > 0 ? (uint64_t) req->exec.max_output
                           : c->conn->max_output ? c->conn->max_output : AGENT_EXEC_OUTPUT_DEFAULT, out_seen = 0;
        int r;

        if (req->type != AGENT_MSG_EXEC)
                return seat_error_set(ret_error, EINVAL, "not an exec request");
        req->id = agent_client_next_id(c);
        r = agent_client_send(c, req, remaining_ms(deadline));
        if (r < 0)
                return seat_error_set(ret_error, -r, "send exec to agent: %s", strerror(-r));

        for (;;) {
                _cleanup_agent_msg_ AgentMsg *m = NULL;
                /* Asked before every wait, not only after a quiet one: a command that prints
                 * without pause is cancelled as soon as one that prints nothing. */
                if (cancelled && !killing && cancelled(userdata)) {
                        killing = true;
                        if (exec_start_kill(c, req->id, &kill_id, &deadline) < 0) {
                                r = seat_error_set(ret_error, EPIPE, "cannot send kill to agent");
                                break;
                        }
                }
                /* Live input only once the exec has started, one at a time. */
                bool want_input = input && started && !killing && !input_token;
                if (want_input) {
                        r = exec_input_send(c, input, userdata, req->id, deadline, &input_id, &input_token);
                        if (r < 0) {
                                r = seat_error_set(ret_error, -r, "send input to agent: %s", strerror(-r));
                                break;
                        }
                        want_input = !input_token;
                }
                r = exec_recv_or(c, deadline, cancelled && !killing, want_input ? input->fd : -EBADF, &m, ret_error);
                if (r == -EAGAIN)
                        continue;
                if (r < 0)
                        break;
                if (killing && m->id == kill_id) {
                        kill_answered = true; /* ok, or not_found when it had just exited */
                        continue;
                }
                if (input_token && m->id == input_id) {
                        if (m->type != AGENT_MSG_OK && m->type != AGENT_MSG_ERROR) {
                                r = seat_error_set(ret_error, EPROTO, "agent answered input %lld with '%s'",
                                                   (long long) input_id, agent_msg_type_to_string(m->type));
                                break;
                        }
                        exec_input_answer(input, userdata, &input_token, m);
                        continue;
                }
                if (m->id != req->id) {
                        r = seat_error_set(ret_error, EPROTO, "agent answered id %lld while request %lld was pending",
                                           (long long) m->id, (long long) req->id);
                        break;
                }
                if (m->type == AGENT_MSG_ERROR) {
                        r = error_reply(m, ret_error);
                        break;
                }
                if (m->type == AGENT_MSG_STARTED && !started) {
                        started = true;
                        res.pid = m->started.pid;
                        continue;
                }
                if (m->type == AGENT_MSG_OUTPUT && started) {
                        size_t pass = (size_t) MIN((uint64_t) m->output.len, out_cap - MIN(out_seen, out_cap));
                        out_seen += m->output.len;
                        cut = cut || pass < m->output.len;
                        if (on_output && !killing && pass > 0) {
                                r = on_output(m->output.is_stderr, m->output.data, pass, userdata);
                                if (r == -ECANCELED) {
                                        killing = true;
                                        if (exec_start_kill(c, req->id, &kill_id, &deadline) < 0) {
                                                r = seat_error_set(ret_error, EPIPE, "cannot send kill to agent");
                                                break;
                                        }
                                } else if (r < 0) {
                                        r = seat_error_set(ret_error, -r, "output handler failed: %s", strerror(-r));
                                        break;
                                }
                        }
                        continue;
                }
                if (m->type == AGENT_MSG_EXIT && started) {
                        if (killing) {
                                r = seat_error_set(ret_error, ECANCELED,
                                                   "cancelled: the command's process group was killed in the guest");
                                break;
                        }
                        r = exec_fill_result(m, &res);
                        if (r < 0) {
                                r = seat_error_set(ret_error, ENOMEM, "out of memory");
                                break;
                        }
                        res.truncated = res.truncated || cut;
                        /* An input that crossed the exit on the channel is still answered
                         * (the agent answers every request), after it: read that reply. */
                        while (input_token) {
                                _cleanup_agent_msg_ AgentMsg *a = NULL;
                                int k;
                                while ((k = exec_recv(c, MIN(deadline, now_monotonic_ms() + EXEC_KILL_DRAIN_MS), false, &a,
                                                      ret_error)) == -EAGAIN)
                                        ;
                                if (k >= 0 && a->id != input_id)
                                        k = seat_error_set(ret_error, EPROTO, "agent answered id %lld while input %lld was pending",
                                                           (long long) a->id, (long long) input_id);
                                if (k < 0) {
                                        exec_input_answer(input, userdata, &input_token, NULL);
                                        agent_exec_result_done(&res);
                                        return k;
                                }
                                exec_input_answer(input, userdata, &input_token, a);
                        }
                        *ret = res;
                        return 0;
                }
                r = seat_error_set(ret_error, EPROTO, "agent sent '%s' out of order for exec %lld",
                                   agent_msg_type_to_string(m->type), (long long) req->id);
                break;
        }
        /* A kill or an input crosses the exec's end on the channel: their replies still
         * come after its last frame, and are read here (in the order they were sent)
         * rather than left for the next call to trip over. */
        if (r == -ECANCELED || r == -EREMOTEIO) {
                if (input_token && killing && !kill_answered && input_id < kill_id) {
                        _cleanup_agent_msg_ AgentMsg *m = NULL;
                        _cleanup_error_ SeatError *err = NULL;
                        int k;
                        while ((k = exec_recv(c, deadline, false, &m, &err)) == -EAGAIN)
                                ;
                        if (k >= 0 && m->id == input_id)
                                exec_input_answer(input, userdata, &input_token, m);
                        else if (k >= 0 && m->id == kill_id)
                                kill_answered = true;
                        else {
                                r = k < 0 ? k : -EPROTO;
                                killing = false;
                        }
                }
                if (killing && !kill_answered) {
                        int k = exec_recv_kill_reply(c, kill_id, deadline, ret_error);
                        if (k < 0)
                                r = k;
                }
                if (input_token && r != -EPROTO && r != -ETIMEDOUT) {
                        int k = exec_recv_kill_reply(c, input_id, deadline, ret_error); /* the input's reply */
                        if (k < 0)
                                r = k;
                }
        }
        exec_input_answer(input, userdata, &input_token, NULL);
        agent_exec_result_done(&res);
        return r;
}

int agent_client_exec(AgentClient *c, AgentMsg *req, AgentOutputFn on_output, void *userdata,
                      int timeout_ms, AgentExecResult *ret, SeatError **ret_error) {
        return agent_client_exec_cancellable(c, req, on_output, NULL, userdata, timeout_ms, ret, ret_error);
}

int agent_client_file_put(AgentClient *c, const char *path, const void *data, size_t len, mode_t mode,
                          int timeout_ms, SeatError **ret_error) {
        int64_t deadline = deadline_in(timeout_ms);
        size_t off = 0;

        do {
                size_t n = MIN(len - off, (size_t) AGENT_CHUNK_MAX);
                _cleanup_agent_msg_ AgentMsg *reply = NULL;
                AgentMsg req = {
                        .type = AGENT_MSG_FILE_PUT,
                        .file_put = { .path = (char *) path, .offset = (int64_t) off,
                                      .data = (uint8_t *) data + off, .len = n, .mode = mode,
                                      .final = off + n == len },
                };
                int r = agent_client_call(c, &req, remaining_ms(deadline), &reply, ret_error);
                if (r < 0) {
                        (void) seat_error_wrap(ret_error, "put '%s' at offset %zu", path, off);
                        return r;
                }
                if (reply->type != AGENT_MSG_OK || reply->ok.size != (int64_t) (off + n))
                        return seat_error_set(ret_error, EPROTO, "agent acknowledged put of '%s' wrongly", path);
                off += n;
        } while (off < len);
        return 0;
}

int agent_client_file_get(AgentClient *c, const char *path, size_t max, int timeout_ms, void **ret,
                          size_t *ret_len, SeatError **ret_error) {
        int64_t deadline = deadline_in(timeout_ms);
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len = 0;

        for (;;) {
                _cleanup_agent_msg_ AgentMsg *reply = NULL;
                AgentMsg req = {
                        .type = AGENT_MSG_FILE_GET,
                        .file_get = { .path = (char *) path, .offset = (int64_t) len, .length = AGENT_CHUNK_MAX },
                };
                int r = agent_client_call(c, &req, remaining_ms(deadline), &reply, ret_error);
                if (r < 0) {
                        (void) seat_error_wrap(ret_error, "get '%s' at offset %zu", path, len);
                        return r;
                }
                if (reply->type != AGENT_MSG_DATA)
                        return seat_error_set(ret_error, EPROTO, "agent answered file_get with '%s'",
                                              agent_msg_type_to_string(reply->type));
                if (len + reply->data.len > max)
                        return seat_error_set(ret_error, EFBIG, "'%s' in the guest is larger than %zu bytes", path, max);
                if (reply->data.len > 0) {
                        uint8_t *n = realloc(buf, len + reply->data.len + 1);
                        if (!n)
                                return seat_error_set(ret_error, ENOMEM, "out of memory");
                        buf = n;
                        memcpy(buf + len, reply->data.data, reply->data.len);
                        len += reply->data.len;
                }
                if (reply->data.eof)
                        break;
                if (reply->data.len == 0)
                        return seat_error_set(ret_error, EPROTO, "agent sent an empty chunk of '%s' before its end", path);
        }
        if (!buf && !(buf = malloc(1)))
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}
