/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event loop: one poll() over the transport, the signalfd, the tools' pipes and (unix
 * mode) the listening socket. Requests are parsed by the shared codec and dispatched to
 * exec.c, files.c, configure.c; replies go through a bounded outgoing queue.
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "config.h"
#include "common/fileio.h"
#include "common/log.h"
#include "pid1.h"
#include "transport.h"

struct OutFrame {
        OutFrame *next;
        char *data;
        size_t len, off;
        int64_t stream; /* the exec or connection whose output it is; 0 for other replies */
};

/* Output bytes queued per stream (see agent_stream_backpressured()). Entries go when
 * their count is back to 0, so the table holds at most one per running exec and
 * connection. */
static size_t *stream_queued_slot(Agent *a, int64_t id, bool create) {
        for (size_t i = 0; i < a->n_stream_queued; i++)
                if (a->stream_queued[i].id == id)
                        return &a->stream_queued[i].bytes;
        if (!create)
                return NULL;
        if (a->n_stream_queued == a->allocated_stream_queued) {
                size_t n = MAX(a->allocated_stream_queued * 2, (size_t) 16);
                void *p = realloc(a->stream_queued, n * sizeof(*a->stream_queued));
                if (!p)
                        return NULL;
                a->stream_queued = p;
                a->allocated_stream_queued = n;
        }
        a->stream_queued[a->n_stream_queued] = (typeof(*a->stream_queued)) { .id = id };
        return &a->stream_queued[a->n_stream_queued++].bytes;
}

static void stream_queued_sub(Agent *a, int64_t id, size_t n) {
        for (size_t i = 0; i < a->n_stream_queued; i++)
                if (a->stream_queued[i].id == id) {
                        a->stream_queued[i].bytes -= MIN(n, a->stream_queued[i].bytes);
                        if (a->stream_queued[i].bytes == 0)
                                a->stream_queued[i] = a->stream_queued[--a->n_stream_queued];
                        return;
                }
}

bool agent_stream_backpressured(Agent *a, int64_t id) {
        if (agent_backpressured(a))
                return true;
        size_t *q = stream_queued_slot(a, id, false);
        return q && *q >= AGENT_STREAM_QUEUED_MAX;
}

static char *agent_capabilities[] = {
        "exec", "stream", "stdin", "kill", "file_put", "file_get", "configure", "shutdown", "ping",
        AGENT_CAP_PTY, /* exec.pty, resize, stream "pty"; stdin acknowledged once the tool took it */
        AGENT_CAP_TCP, /* connect (forward.c) */
        NULL, /* AGENT_CAP_READY_CHECK goes here when the image has one (agent_handle_hello) */
        NULL,
};

int poll_set_add(PollSet *s, int fd, short events) {
        if (s->n >= s->allocated) {
                size_t n = MAX(s->allocated * 2, (size_t) 16);
                struct pollfd *p = realloc(s->fds, n * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                s->fds = p;
                s->allocated = n;
        }
        s->fds[s->n] = (struct pollfd) { .fd = fd, .events = events };
        return (int) s->n++;
}

static void out_queue_clear(Agent *a) {
        while (a->out_head) {
                OutFrame *f = a->out_head;
                a->out_head = f->next;
                free(f->data);
                free(f);
        }
        a->out_tail = NULL;
        a->out_bytes = 0;
        a->n_stream_queued = 0;
}

static bool agent_can_send(const Agent *a) {
        return a->transport.connected && a->transport.out_fd >= 0;
}

/* Takes ownership of line; stream: the exec or connection whose output it is, or 0. */
static int out_queue_push_stream(Agent *a, char *line, size_t len, int64_t stream) {
        _cleanup_free_ char *l = line;
        OutFrame *f;

        if (!agent_can_send(a))
                return 0; /* no host: dropped */

        f = calloc(1, sizeof(*f));
        if (!f)
                return log_error_errno(ENOMEM, "Cannot queue a reply: %m");
        if (stream != 0) {
                size_t *q = stream_queued_slot(a, stream, true);
                if (!q) {
                        free(f);
                        return log_error_errno(ENOMEM, "Cannot queue output: %m");
                }
                *q += len;
        }
        f->data = TAKE_PTR(l);
        f->len = len;
        f->stream = stream;
        if (a->out_tail)
                a->out_tail->next = f;
        else
                a->out_head = f;
        a->out_tail = f;
        a->out_bytes += len;
        return 0;
}

static int out_queue_push(Agent *a, char *line, size_t len) {
        return out_queue_push_stream(a, line, len, 0);
}

bool agent_backpressured(const Agent *a) {
        return a->out_bytes >= AGENT_OUT_HIGH_WATER;
}

size_t agent_chunk_max(const Agent *a) {
        size_t room = a->limits.max_frame > AGENT_FRAME_OVERHEAD ? a->limits.max_frame - AGENT_FRAME_OVERHEAD : 0;
        return MIN((size_t) AGENT_CHUNK_MAX, room / 4 * 3);
}

int agent_send_error(Agent *a, int64_t id, const char *code, const char *fmt, ...) {
        _cleanup_free_ char *line = NULL;
        char message[512];
        size_t len;
        va_list ap;
        int r;

        va_start(ap, fmt);
        (void) vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);

        if (log_get_max_level() >= LOG_LEVEL_DEBUG) {
                _cleanup_free_ char *e = log_escape(message, strlen(message), 256);
                log_debug("Request %" PRId64 ": error %s: %s", id, code, e ?: "?");
        }

        if (!agent_can_send(a))
                return 0;
        r = agent_format_error(id, code, message, a->limits.max_frame, &line, &len);
        if (r < 0)
                return log_error_errno(r, "Cannot format an error reply: %m");
        return out_queue_push(a, TAKE_PTR(line), len);
}

int agent_send_ok(Agent *a, int64_t id, int64_t size) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r;

        if (!agent_can_send(a))
                return 0;
        r = agent_format_ok(id, size, a->limits.max_frame, &line, &len);
        if (r < 0)
                return log_error_errno(r, "Cannot format an ok reply: %m");
        return out_queue_push(a, TAKE_PTR(line), len);
}

void agent_acks_flush(Agent *a, AgentAcks *acks, bool detached, const char *what, int64_t id, const char *code,
                      const char *message) {
        for (unsigned i = 0; i < acks->n && !detached; i++) {
                if (code)
                        (void) agent_send_error(a, acks->ids[i], code, "%s %" PRId64 " %s", what, id, message);
                else
                        (void) agent_send_ok(a, acks->ids[i], -1);
        }
        acks->n = 0;
}

int agent_send(Agent *a, const AgentMsg *m) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r;

        if (!agent_can_send(a))
                return 0;
        r = agent_msg_format(m, a->limits.max_frame, &line, &len);
        if (r < 0) {
                log_error_errno(r, "Cannot format a '%s' reply to request %" PRId64 ": %m",
                                agent_msg_type_to_string(m->type), m->id);
                /* A reply the host waits for must still arrive. */
                if (m->type != AGENT_MSG_OUTPUT && m->type != AGENT_MSG_STARTED)
                        return agent_send_error(a, m->id, AGENT_ERR_IO, "reply could not be formatted: %s",
                                                strerror(-r));
                return r;
        }
        return out_queue_push(a, TAKE_PTR(line), len);
}

int agent_send_output(Agent *a, int64_t id, AgentStream stream, const uint8_t *data, size_t len) {
        _cleanup_free_ char *line = NULL;
        size_t n;

        if (!agent_can_send(a))
                return 0;
        int r = stream == AGENT_STREAM_PTY ? agent_format_output_pty(id, data, len, a->limits.max_frame, &line, &n)
                                           : agent_format_output(id, stream == AGENT_STREAM_STDERR, data, len,
                                                                 a->limits.max_frame, &line, &n);
        if (r < 0)
                return log_error_errno(r, "Cannot format output of request %" PRId64 ": %m", id);
        return out_queue_push_stream(a, TAKE_PTR(line), n, id);
}

/* A new host (or none): forget everything about the previous connection. */
static int agent_reset_connection(Agent *a) {
        FrameReader *r;

        out_queue_clear(a);
        a->hello_done = false;
        r = frame_reader_new(a->limits.max_frame);
        if (!r)
                return log_error_errno(ENOMEM, "Cannot allocate the frame reader: %m");
        frame_reader_free(a->reader);
        a->reader = r;
        return 0;
}

static void agent_disconnected(Agent *a, const char *why) {
        if (!a->transport.connected)
                return;
        log_info("Host disconnected (%s)", why);
        transport_drop(&a->transport);
        (void) agent_reset_connection(a);
}

static void agent_probe(Agent *a) {
        int r;

        if (a->transport.mode != TRANSPORT_VIRTIO || a->transport.connected)
                return;
        a->next_probe_ms = now_monotonic_ms() + AGENT_BACKSTOP_MS;
        r = transport_probe(&a->transport);
        if (r < 0) {
                log_warning_errno(r, "Cannot probe the agent port: %m");
                return;
        }
        if (r == 0)
                return;
        log_info("Host connected");
        (void) agent_reset_connection(a);
        a->transport.connected = true;
}

static int agent_setup_signals(Agent *a) {
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGIO);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Cannot block signals: %m");
        a->signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
        if (a->signal_fd < 0)
                return log_error_errno(errno, "Cannot create the signalfd: %m");
        return 0;
}

int agent_new(const AgentLimits *limits, bool pid1, Agent **ret) {
        _cleanup_(agent_freep) Agent *a = NULL;
        int r;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->limits = *limits;
        a->pid1 = pid1;
        a->signal_fd = -EBADF;
        transport_init(&a->transport);
        a->reader = frame_reader_new(limits->max_frame);
        if (!a->reader)
                return -ENOMEM;
        /* Before any transport exists: an early SIGIO must not kill us. */
        r = agent_setup_signals(a);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(a);
        return 0;
}

Agent *agent_free(Agent *a) {
        if (!a)
                return NULL;
        exec_free_all(a);
        forward_free_all(a);
        out_queue_clear(a);
        free(a->stream_queued);
        frame_reader_free(a->reader);
        transport_close(&a->transport);
        safe_close(a->signal_fd);
        return mfree(a);
}

/* ---- requests ---- */

static int agent_handle_hello(Agent *a, const AgentMsg *m) {
        AgentMsg reply = { .type = AGENT_MSG_HELLO, .id = m->id };

        if (m->hello.version != AGENT_PROTO_VERSION) {
                a->hello_done = false;
                return agent_send_error(a, m->id, AGENT_ERR_VERSION,
                                        "protocol version %" PRId64 " is not supported; this agent speaks version %d",
                                        m->hello.version, AGENT_PROTO_VERSION);
        }

        reply.hello.version = AGENT_PROTO_VERSION;
        reply.hello.agent = (char *) "guest-init " SEATD_VERSION;
        /* Asked at each hello, not at start: the image decides, and a busybox image without
         * the file stays as it was (no new capability, nothing new for the host to do). */
        agent_capabilities[ELEMENTSOF(agent_capabilities) - 2] =
                access(AGENT_READY_CHECK_PATH, R_OK) >= 0 ? (char *) AGENT_CAP_READY_CHECK : NULL;
        reply.hello.capabilities = agent_capabilities;
        reply.hello.boot_ms = a->ready_boottime_ms;
        reply.hello.uptime_ms = now_boottime_ms();
        reply.hello.max_frame = (int64_t) a->limits.max_frame;
        reply.hello.max_execs = a->limits.max_execs;
        reply.hello.max_output = (int64_t) a->limits.max_output;
        reply.hello.max_file = (int64_t) a->limits.max_file;

        /* Whoever started earlier execs is gone (or starts over): nothing may reach the new
         * host under ids it never sent. */
        exec_detach_all(a);
        forward_detach_all(a);
        a->hello_done = true;
        log_info("Host said hello (request %" PRId64 ")", m->id);
        return agent_send(a, &reply);
}

static int agent_handle_ping(Agent *a, const AgentMsg *m) {
        AgentMsg reply = { .type = AGENT_MSG_PONG, .id = m->id };

        reply.pong.uptime_ms = now_boottime_ms();
        return agent_send(a, &reply);
}

static int agent_handle_shutdown(Agent *a, const AgentMsg *m) {
        const char *action = m->shutdown.action ?: "poweroff";

        if (strcmp(action, "poweroff") == 0)
                a->shutdown_reboot = false;
        else if (strcmp(action, "reboot") == 0)
                a->shutdown_reboot = true;
        else
                return agent_send_error(a, m->id, AGENT_ERR_INVALID,
                                        "field 'action' must be \"poweroff\" or \"reboot\"");

        log_notice("Shutdown requested (%s)", a->shutdown_reboot ? "reboot" : "poweroff");
        a->shutdown_pending = true;
        a->shutdown_deadline_ms = now_monotonic_ms() + AGENT_SHUTDOWN_FLUSH_MS;
        return agent_send_ok(a, m->id, -1);
}

/* A stdin or a kill goes to whichever owns the id: a forwarded connection or an exec. */
static int agent_handle_stdin(Agent *a, const AgentMsg *m) {
        return forward_owns(a, m->stdin_msg.exec) ? forward_handle_stdin(a, m) : exec_handle_stdin(a, m);
}

static int agent_handle_kill(Agent *a, const AgentMsg *m) {
        return forward_owns(a, m->kill.exec) ? forward_handle_kill(a, m) : exec_handle_kill(a, m);
}

/* Every request type has its handler; a reply type has none. */
typedef int (*AgentHandler)(Agent *a, const AgentMsg *m);
static const AgentHandler handlers[_AGENT_MSG_MAX] = {
        [AGENT_MSG_HELLO] = agent_handle_hello,
        [AGENT_MSG_PING] = agent_handle_ping,
        [AGENT_MSG_CONFIGURE] = configure_handle,
        [AGENT_MSG_EXEC] = exec_handle_exec,
        [AGENT_MSG_STDIN] = agent_handle_stdin,
        [AGENT_MSG_KILL] = agent_handle_kill,
        [AGENT_MSG_CONNECT] = forward_handle_connect,
        [AGENT_MSG_RESIZE] = exec_handle_resize,
        [AGENT_MSG_FILE_PUT] = files_handle_put,
        [AGENT_MSG_FILE_GET] = files_handle_get,
        [AGENT_MSG_SHUTDOWN] = agent_handle_shutdown,
};

static int agent_dispatch(Agent *a, const AgentMsg *m) {
        log_debug("Request %" PRId64 ": %s", m->id, agent_msg_type_to_string(m->type));

        AgentHandler handler = (unsigned) m->type < _AGENT_MSG_MAX ? handlers[m->type] : NULL;
        if (!handler)
                return agent_send_error(a, m->id, AGENT_ERR_UNKNOWN_TYPE, "type '%s' is not a request",
                                        agent_msg_type_to_string(m->type));

        if (!a->hello_done && m->type != AGENT_MSG_HELLO && m->type != AGENT_MSG_PING)
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "send 'hello' first");

        if (a->shutdown_pending && m->type != AGENT_MSG_PING)
                return agent_send_error(a, m->id, AGENT_ERR_STATE, "the agent is shutting down");

        return handler(a, m);
}

static void agent_handle_frame(Agent *a, const char *frame, size_t len) {
        _cleanup_agent_msg_ AgentMsg *m = NULL;
        AgentParseError err = {};
        int r;

        r = agent_msg_parse(frame, len, &m, &err);
        if (r < 0) {
                (void) agent_send_error(a, err.id, err.code ?: AGENT_ERR_MALFORMED, "%s",
                                        err.message[0] ? err.message : "malformed frame");
                return;
        }
        (void) agent_dispatch(a, m);
}

/* Handle the frames already buffered, as long as the outgoing queue has room. */
static void agent_process_frames(Agent *a) {
        while (a->transport.connected && !agent_backpressured(a) && !a->quit) {
                const char *frame;
                size_t len;
                int r;

                r = frame_reader_next(a->reader, &frame, &len);
                if (r == 0)
                        return;
                if (r == -E2BIG) {
                        (void) agent_send_error(a, 0, AGENT_ERR_TOO_LARGE, "frame longer than %zu bytes",
                                                a->limits.max_frame);
                        continue;
                }
                if (r < 0) {
                        log_warning_errno(r, "Frame reader failed: %m");
                        return;
                }
                agent_handle_frame(a, frame, len);
        }
}

static void agent_read_transport(Agent *a) {
        ssize_t n;

        n = frame_reader_fill(a->reader, a->transport.fd);
        if (n == -EAGAIN || n == -EINTR || n == -ENOBUFS)
                return;
        if (n == 0) {
                if (a->transport.mode == TRANSPORT_STDIO) {
                        log_debug("EOF on stdin");
                        transport_drop(&a->transport);
                        return;
                }
                agent_disconnected(a, "end of file");
                return;
        }
        if (n < 0) {
                log_warning_errno((int) n, "Cannot read from the host: %m");
                if (a->transport.mode == TRANSPORT_STDIO)
                        transport_drop(&a->transport);
                else
                        agent_disconnected(a, "read error");
                return;
        }
}

static void agent_write_transport(Agent *a) {
        size_t budget = AGENT_WRITE_BUDGET;

        while (a->out_head && budget > 0) {
                OutFrame *f = a->out_head;
                size_t want = MIN(f->len - f->off, budget);
                ssize_t n;

                n = write(a->transport.out_fd, f->data + f->off, want);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                return;
                        log_warning_errno(errno, "Cannot write to the host: %m");
                        if (a->transport.mode == TRANSPORT_STDIO) {
                                /* Nobody reads stdout any more: nothing left to say. */
                                a->transport.connected = false;
                                out_queue_clear(a);
                        } else
                                agent_disconnected(a, "write error");
                        return;
                }
                f->off += (size_t) n;
                a->out_bytes -= (size_t) n;
                budget -= (size_t) n;
                if (f->off == f->len) {
                        if (f->stream != 0)
                                stream_queued_sub(a, f->stream, f->len);
                        a->out_head = f->next;
                        if (!a->out_head)
                                a->out_tail = NULL;
                        free(f->data);
                        free(f);
                }
        }
}

static void agent_read_signals(Agent *a) {
        for (;;) {
                struct signalfd_siginfo si;
                ssize_t n;

                n = read(a->signal_fd, &si, sizeof(si));
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                log_warning_errno(errno, "Cannot read the signalfd: %m");
                        return;
                }
                if ((size_t) n != sizeof(si))
                        return;

                switch (si.ssi_signo) {
                case SIGCHLD:
                        exec_reap_children(a);
                        break;
                case SIGIO:
                        agent_probe(a);
                        break;
                case SIGTERM:
                case SIGINT:
                        if (a->pid1) {
                                log_notice("Ignoring signal %u as PID 1", si.ssi_signo);
                                break;
                        }
                        log_info("Received %s, exiting", strsignal((int) si.ssi_signo));
                        a->quit = true;
                        a->exit_status = 0;
                        break;
                default:
                        break;
                }
        }
}

static void agent_do_shutdown(Agent *a) {
        int r;

        a->shutdown_pending = false;
        exec_kill_all(a);

        if (!a->pid1) {
                log_info("Shutdown: exiting");
                a->quit = true;
                a->exit_status = 0;
                return;
        }

        r = pid1_finish(a->shutdown_reboot);
        /* Still here: the reboot failed. PID 1 never exits; keep serving. */
        log_error_errno(r, "Cannot %s: %m; carrying on", a->shutdown_reboot ? "reboot" : "power off");
}

static int agent_compute_timeout(Agent *a) {
        int64_t now = now_monotonic_ms(), deadline = MIN(exec_next_deadline(a), forward_next_deadline(a));

        if (a->transport.mode == TRANSPORT_VIRTIO && !a->transport.connected)
                deadline = MIN(deadline, a->next_probe_ms);
        if (a->shutdown_pending)
                deadline = MIN(deadline, a->shutdown_deadline_ms);
        if (deadline == INT64_MAX)
                return -1;
        if (deadline <= now)
                return 0;
        return (int) MIN(deadline - now, (int64_t) INT_MAX);
}

static int agent_build_pollset(Agent *a, PollSet *s) {
        Transport *t = &a->transport;
        int r;

        s->n = 0;
        a->pfd_transport = a->pfd_listen = -1;

        a->pfd_signal = r = poll_set_add(s, a->signal_fd, POLLIN);
        if (r < 0)
                return r;

        if (t->listen_fd >= 0) {
                a->pfd_listen = r = poll_set_add(s, t->listen_fd, POLLIN);
                if (r < 0)
                        return r;
        }

        if (t->connected && t->fd >= 0) {
                short events = 0;
                bool want_in = !t->input_eof && !agent_backpressured(a) && !a->shutdown_pending;

                if (want_in)
                        events |= POLLIN;
                if (a->out_head && t->out_fd == t->fd)
                        events |= POLLOUT;

                /* stdin in stdio mode would report POLLHUP without being read: skip it then. */
                if (t->mode != TRANSPORT_STDIO || want_in) {
                        a->pfd_transport = r = poll_set_add(s, t->fd, events);
                        if (r < 0)
                                return r;
                }
        }
        if (t->connected && t->out_fd >= 0 && t->out_fd != t->fd && a->out_head) {
                /* stdio: stdout separately; tagged through pfd_transport + 1 below */
                r = poll_set_add(s, t->out_fd, POLLOUT);
                if (r < 0)
                        return r;
        }

        r = exec_add_pollfds(a, s);
        if (r < 0)
                return r;
        return forward_add_pollfds(a, s);
}

static void agent_dispatch_transport(Agent *a, const PollSet *s) {
        Transport *t = &a->transport;

        if (a->pfd_listen >= 0 && (s->fds[a->pfd_listen].revents & POLLIN)) {
                int r = transport_accept(t);
                if (r < 0)
                        log_warning_errno(r, "Cannot accept a connection: %m");
                else if (r > 0) {
                        log_info("Host connected");
                        (void) agent_reset_connection(a);
                }
        }

        if (a->pfd_transport >= 0 && t->connected) {
                short rev = s->fds[a->pfd_transport].revents;

                /* A virtio port reports POLLIN beside POLLHUP while no host is connected, and
                 * data may already wait there: the next host's, sent before the guest has
                 * seen that host connect (control events and data travel separate queues).
                 * Read nothing then: the data stays in the port for the session it belongs
                 * to, which starts when the port says a host is there (agent_probe()). */
                if (t->mode == TRANSPORT_VIRTIO && (rev & (POLLHUP | POLLERR | POLLNVAL)))
                        agent_disconnected(a, "hangup");
                else if (rev & POLLIN)
                        agent_read_transport(a);
                else if (rev & (POLLHUP | POLLERR | POLLNVAL)) {
                        if (t->mode == TRANSPORT_STDIO)
                                agent_read_transport(a); /* reads the EOF */
                        else
                                agent_disconnected(a, "hangup");
                }
        }

        /* Always try to write: cheap, and covers stdout in stdio mode. */
        if (t->connected && a->out_head)
                agent_write_transport(a);
}

static void poll_set_done(PollSet *s) {
        s->fds = mfree(s->fds);
        s->n = s->allocated = 0;
}

int agent_run(Agent *a) {
        _cleanup_(poll_set_done) PollSet s = {};
        int r;

        a->ready_boottime_ms = now_boottime_ms();
        log_info("guest-init " SEATD_VERSION " ready after %" PRId64 " ms", a->ready_boottime_ms);

        if (a->transport.mode == TRANSPORT_VIRTIO)
                agent_probe(a);

        while (!a->quit) {
                int timeout;

                agent_process_frames(a);

                if (a->shutdown_pending && (!a->out_head || now_monotonic_ms() >= a->shutdown_deadline_ms)) {
                        agent_do_shutdown(a);
                        if (a->quit)
                                break;
                }

                if (a->transport.mode == TRANSPORT_STDIO && a->transport.input_eof && a->n_execs == 0 && a->n_forwards == 0 &&
                    (!a->out_head || !a->transport.connected)) {
                        log_debug("stdin closed and nothing left to do: exiting");
                        break;
                }

                r = agent_build_pollset(a, &s);
                if (r < 0) {
                        log_error_errno(r, "Cannot build the poll set: %m");
                        return r;
                }

                timeout = agent_compute_timeout(a);
                r = poll(s.fds, s.n, timeout);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "poll() failed: %m");
                }

                if (s.fds[a->pfd_signal].revents & POLLIN)
                        agent_read_signals(a);

                agent_dispatch_transport(a, &s);
                exec_dispatch_pollfds(a, &s);
                forward_dispatch_pollfds(a, &s);
                exec_process_timers(a);
                forward_process_timers(a);

                /* Backstop: a virtio port whose SIGIO we missed. */
                if (a->transport.mode == TRANSPORT_VIRTIO && !a->transport.connected &&
                    now_monotonic_ms() >= a->next_probe_ms)
                        agent_probe(a);
        }

        return a->exit_status;
}
