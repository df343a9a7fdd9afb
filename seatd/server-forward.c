/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat.forward (docs/protocol-control.md "Port forwarding"): TCP connections into a seat,
 * made by the guest agent (`connect`, capability "tcp") to a host and port as the guest
 * sees them. The path is the agent channel, never the seat's network, so the egress
 * policy neither helps nor hinders it.
 *
 * One seat.forward request is a tunnel to one target; its client opens streams on it
 * (seat.forward.open), sends (seat.forward.send, eof = half-close) and aborts them
 * (seat.forward.close), each a follow-up on the same connection. What the guest's peer
 * sends arrives as events of the tunnel: `data`, `eof`, `closed`. The tunnel holds the
 * seat's agent only while it has streams, so execs run between connections.
 */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>

#include "common/base64.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "exec-tool.h"
#include "methods.h"
#include "seat.h"
#include "seat-log.h"

#define FORWARD_SEND_MAX (64u * 1024u)     /* one seat.forward.send: as a seat.exec.stdin */
#define FORWARD_CONNECT_TIMEOUT_MS 10000   /* the guest's connect() */
#define FORWARD_SEND_TIMEOUT_MS 30000      /* the channel takes a frame (the agent reads as it writes) */
#define FORWARD_DRAIN_MS 5000              /* after a cancel: the streams' exits */
#define FORWARD_TICK_MS 250                /* cancellation and preemption are asked this often */

typedef struct Stream Stream;
struct Stream {
        Stream *next;
        int64_t id;        /* the seat.forward.open request's id: the client's name for it */
        int64_t agent_id;  /* the connect's id on the agent channel */
        Request *open;     /* until the guest connected (or failed) */
        bool connected, ended;
        int64_t start_ms, last_ms;
        uint64_t start_seq; /* its forward.start record */
        int64_t to_guest, from_guest;
        const char *close_reason; /* set when seatd ended it: "idle", "client", "reset or release" */
};

/* An agent request waiting for its answer: a stdin or kill, maybe of a follow-up. */
typedef struct Pending Pending;
struct Pending {
        Pending *next;
        int64_t agent_id;
        Request *follow; /* NULL for seatd's own kill */
};

typedef struct Tunnel {
        Request *req;
        Seat *seat;
        SeatTicket ticket;
        char *host;
        int64_t port;
        long max_streams;
        int64_t idle_ms;
        Stream *streams;
        unsigned n_streams;
        Pending *pending;
        Request *waiting; /* opens that arrived while the tunnel held no session */
} Tunnel;

static void tunnel_free(void *p) {
        Tunnel *t = p;
        if (!t)
                return;
        seat_unref(t->seat);
        FREE_MANY(t->host, t);
}

static Stream *stream_by_id(Tunnel *t, int64_t id) {
        for (Stream *s = t->streams; s; s = s->next)
                if (s->id == id)
                        return s;
        return NULL;
}

static Stream *stream_by_agent_id(Tunnel *t, int64_t id) {
        for (Stream *s = t->streams; s; s = s->next)
                if (s->agent_id == id)
                        return s;
        return NULL;
}

static Pending *pending_take(Tunnel *t, int64_t agent_id) {
        for (Pending **p = &t->pending; *p; p = &(*p)->next)
                if ((*p)->agent_id == agent_id) {
                        Pending *x = *p;
                        *p = x->next;
                        return x;
                }
        return NULL;
}

static int pending_add(Tunnel *t, int64_t agent_id, Request *follow) {
        Pending *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (Pending) { .next = t->pending, .agent_id = agent_id, .follow = follow };
        t->pending = p;
        return 0;
}

static void stream_event(Tunnel *t, Stream *s, const char *type, const uint8_t *data, size_t len) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *b64 = NULL;
        if (!o)
                return;
        json_object_object_add(o, "stream", json_object_new_int64(s->id));
        if (data) {
                if (base64_encode(data, len, &b64, NULL) < 0)
                        return;
                json_object_object_add(o, "data", json_object_new_string(b64));
        }
        job_event(t->req, type, o);
}

/* The stream is over: its record, the client's `closed` event, and it goes. */
static void stream_end(Tunnel *t, Stream *s, const char *status, const char *error) {
        _cleanup_json_ json_object *end = json_object_new_object();
        if (end) {
                json_object_object_add(end, "start", json_object_new_int64((int64_t) s->start_seq));
                json_object_object_add(end, "status", json_object_new_string(status));
                json_object_object_add(end, "bytes_to_guest", json_object_new_int64(s->to_guest));
                json_object_object_add(end, "bytes_from_guest", json_object_new_int64(s->from_guest));
                json_object_object_add(end, "duration_ms", json_object_new_int64(now_monotonic_ms() - s->start_ms));
                if (s->close_reason)
                        json_object_object_add(end, "closed_by", json_object_new_string(s->close_reason));
                if (error)
                        json_object_object_add(end, "error", json_object_new_string(error));
        }
        if (!end || seat_audit(t->seat, "forward.end", end) < 0)
                log_seat_error(seat_id(t->seat), "seat '%s': the end of forward record %" PRIu64 " is not in the audit log",
                               seat_id(t->seat), s->start_seq);
        log_notice("forward seat=%s uid=%u target=%s:%" PRId64 " stream=%" PRId64 " %s to_guest=%" PRId64
                   " from_guest=%" PRId64 "%s%s",
                   seat_id(t->seat), (unsigned) t->req->uid, t->host, t->port, s->id, status, s->to_guest, s->from_guest,
                   error ? " error=" : "", error ? error : "");
        if (s->open) {
                job_reply_error(s->open, CONTROL_ERR_IO, "the guest could not connect to %s:%" PRId64 ": %s", t->host, t->port,
                                error ? error : status);
                s->open = NULL;
        } else {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (o) {
                        json_object_object_add(o, "stream", json_object_new_int64(s->id));
                        json_object_object_add(o, "status", json_object_new_string(status));
                        json_object_object_add(o, "bytes_to_guest", json_object_new_int64(s->to_guest));
                        json_object_object_add(o, "bytes_from_guest", json_object_new_int64(s->from_guest));
                        if (error)
                                json_object_object_add(o, "error", json_object_new_string(error));
                        if (s->close_reason)
                                json_object_object_add(o, "closed_by", json_object_new_string(s->close_reason));
                        job_event(t->req, "closed", o);
                }
        }
        for (Stream **p = &t->streams; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        t->n_streams--;
        free(s);
}

/* ---- follow-ups, under the session ---- */

static int open_stream(Tunnel *t, AgentClient *agent, Request *f, SeatError **ret_error) {
        if (t->n_streams >= (unsigned) t->max_streams) {
                job_reply_error(f, CONTROL_ERR_STATE, "seat '%s' already has %u forwarded connections (forward_max_connections)",
                                seat_id(t->seat), t->n_streams);
                return 0;
        }
        _cleanup_json_ json_object *rec = json_object_new_object();
        if (!rec)
                return -ENOMEM;
        json_object_object_add(rec, "uid", json_object_new_int64(t->req->uid));
        json_object_object_add(rec, "operator", json_object_new_boolean(t->req->operator));
        json_object_object_add(rec, "host", json_object_new_string(t->host));
        json_object_object_add(rec, "port", json_object_new_int64(t->port));
        json_object_object_add(rec, "stream", json_object_new_int64(f->id));
        uint64_t seq = 0;
        _cleanup_error_ SeatError *aerr = NULL;
        if (seat_audit_required(t->seat, "forward.start", rec, &seq, &aerr) < 0) {
                job_reply_error(f, CONTROL_ERR_IO, "%s", aerr ? aerr->message : "the audit log cannot record this");
                return 0;
        }
        Stream *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (Stream) { .id = f->id, .agent_id = agent_client_next_id(agent), .open = f, .start_ms = now_monotonic_ms(),
                        .start_seq = seq };
        s->last_ms = s->start_ms;
        s->next = t->streams;
        t->streams = s;
        t->n_streams++;
        AgentMsg m = { .type = AGENT_MSG_CONNECT, .id = s->agent_id,
                       .connect = { .host = t->host, .port = t->port, .timeout_ms = FORWARD_CONNECT_TIMEOUT_MS } };
        int r = agent_client_send(agent, &m, FORWARD_SEND_TIMEOUT_MS);
        if (r < 0)
                return seat_error_set(ret_error, -r, "send connect to agent: %s", strerror(-r));
        return 0;
}

static int send_to_stream(Tunnel *t, AgentClient *agent, Request *f, SeatError **ret_error) {
        int64_t sid = 0;
        _cleanup_free_ void *data = NULL;
        size_t len = 0;
        bool eof = false;
        (void) json_get_int64(f->params, "stream", true, 1, (int64_t) 1 << 53, &sid);
        Stream *s = stream_by_id(t, sid);
        if (!s || s->ended) {
                job_reply_error(f, CONTROL_ERR_NOT_FOUND, "no open stream %" PRId64 " on forward %lld", sid, (long long) t->req->id);
                return 0;
        }
        if (!s->connected) {
                job_reply_error(f, CONTROL_ERR_STATE, "stream %" PRId64 " is not connected yet: wait for the open's result", sid);
                return 0;
        }
        AgentMsg m = { .id = agent_client_next_id(agent) };
        if (!strcmp(f->method, "seat.forward.close")) {
                m.type = AGENT_MSG_KILL;
                m.kill = (typeof(m.kill)) { .exec = s->agent_id, .signal = 9 };
                s->close_reason = "client";
        } else {
                (void) json_get_base64(f->params, "data", false, FORWARD_SEND_MAX, &data, &len);
                (void) json_get_bool(f->params, "eof", false, &eof);
                m.type = AGENT_MSG_STDIN;
                m.stdin_msg = (typeof(m.stdin_msg)) { .exec = s->agent_id, .data = data, .len = len, .eof = eof };
                s->to_guest += (int64_t) len;
        }
        s->last_ms = now_monotonic_ms();
        int r = pending_add(t, m.id, f);
        if (r < 0)
                return r;
        r = agent_client_send(agent, &m, FORWARD_SEND_TIMEOUT_MS);
        if (r < 0)
                return seat_error_set(ret_error, -r, "send to agent: %s", strerror(-r));
        return 0;
}

static int handle_follow(Tunnel *t, AgentClient *agent, Request *f, SeatError **ret_error) {
        if (!strcmp(f->method, "seat.forward.open"))
                return open_stream(t, agent, f, ret_error);
        return send_to_stream(t, agent, f, ret_error);
}

/* seatd ends a stream itself (idle, cancelled): the guest resets the connection. */
static int kill_stream(Tunnel *t, AgentClient *agent, Stream *s, const char *why) {
        if (s->ended)
                return 0;
        s->ended = true;
        s->close_reason = why;
        AgentMsg m = { .type = AGENT_MSG_KILL, .id = agent_client_next_id(agent), .kill = { .exec = s->agent_id, .signal = 9 } };
        int r = pending_add(t, m.id, NULL);
        if (r < 0)
                return r;
        return agent_client_send(agent, &m, FORWARD_SEND_TIMEOUT_MS);
}

/* ---- what the agent sends ---- */

static const char *follow_code(const char *agent_code) {
        if (!strcmp(agent_code, AGENT_ERR_NOT_FOUND) || !strcmp(agent_code, AGENT_ERR_STATE) ||
            !strcmp(agent_code, AGENT_ERR_LIMIT))
                return CONTROL_ERR_STATE;
        return CONTROL_ERR_IO;
}

static int handle_agent(Tunnel *t, AgentMsg *m, SeatError **ret_error) {
        Pending *p = pending_take(t, m->id);
        if (p) {
                if (p->follow) {
                        if (m->type == AGENT_MSG_OK)
                                job_reply(p->follow, NULL);
                        else if (m->type == AGENT_MSG_ERROR) {
                                _cleanup_free_ char *e = log_escape(m->error.message ? m->error.message : "",
                                                                    m->error.message ? strlen(m->error.message) : 0, 256);
                                job_reply_error(p->follow, follow_code(m->error.code), "not delivered: %s", e ? e : "?");
                        } else /* taken from the pending list: nobody else would answer it */
                                job_reply_error(p->follow, CONTROL_ERR_IO, "not delivered: the agent answered with '%s'",
                                                agent_msg_type_to_string(m->type));
                }
                free(p);
                if (m->type != AGENT_MSG_OK && m->type != AGENT_MSG_ERROR)
                        return seat_error_set(ret_error, EPROTO, "agent answered stdin/kill %lld with '%s'",
                                              (long long) m->id, agent_msg_type_to_string(m->type));
                return 0;
        }
        Stream *s = stream_by_agent_id(t, m->id);
        if (!s)
                return seat_error_set(ret_error, EPROTO, "agent sent '%s' for id %lld, which no request of this forward has",
                                      agent_msg_type_to_string(m->type), (long long) m->id);
        switch (m->type) {
        case AGENT_MSG_STARTED:
                if (!s->open)
                        return seat_error_set(ret_error, EPROTO, "agent said 'started' twice for connection %lld", (long long) m->id);
                s->connected = true;
                s->last_ms = now_monotonic_ms();
                job_reply(s->open, NULL);
                s->open = NULL;
                return 0;
        case AGENT_MSG_ERROR: {
                if (!s->open)
                        return seat_error_set(ret_error, EPROTO, "agent refused connection %lld after it started", (long long) m->id);
                _cleanup_free_ char *e = log_escape(m->error.message ? m->error.message : "",
                                                    m->error.message ? strlen(m->error.message) : 0, 256);
                stream_end(t, s, "refused", e ? e : "?");
                return 0;
        }
        case AGENT_MSG_OUTPUT:
                if (!s->connected)
                        return seat_error_set(ret_error, EPROTO, "agent sent output for connection %lld before it started", (long long) m->id);
                s->last_ms = now_monotonic_ms();
                s->from_guest += (int64_t) m->output.len;
                if (m->output.len > 0)
                        stream_event(t, s, "data", m->output.data, m->output.len);
                if (m->output.eof)
                        stream_event(t, s, "eof", NULL, 0);
                return 0;
        case AGENT_MSG_EXIT: {
                _cleanup_free_ char *e = m->exit.error ? log_escape(m->exit.error, strlen(m->exit.error), 256) : NULL;
                stream_end(t, s, s->close_reason ? "closed" : m->exit.code == 0 ? "done" : "failed", e);
                return 0;
        }
        default:
                return seat_error_set(ret_error, EPROTO, "agent sent '%s' for connection %lld",
                                      agent_msg_type_to_string(m->type), (long long) m->id);
        }
}

/* ---- the session: the seat's agent is ours while streams are open ---- */

static int tunnel_session(Seat *seat, AgentClient *agent, void *userdata, SeatError **ret_error) {
        Tunnel *t = userdata;
        int64_t cancel_deadline = 0;
        int r;

        while (t->waiting) {
                Request *f = t->waiting;
                t->waiting = f->inbox_next;
                f->inbox_next = NULL;
                if ((r = handle_follow(t, agent, f, ret_error)) < 0)
                        return r;
        }
        for (;;) {
                bool cancel = seat_preempted(seat) || job_cancelled(t->req);
                if (cancel && !cancel_deadline) {
                        cancel_deadline = now_monotonic_ms() + FORWARD_DRAIN_MS;
                        for (Stream *s = t->streams; s; s = s->next)
                                if ((r = kill_stream(t, agent, s, seat_preempted(seat) ? "reset or release" : "client")) < 0)
                                        return seat_error_set(ret_error, -r, "send kill to agent: %s", strerror(-r));
                }
                if (!t->streams && !t->pending)
                        return cancel ? seat_error_set(ret_error, ECANCELED, "forward to %s:%" PRId64 " cancelled: %s", t->host,
                                                       t->port, seat_preempted(seat) ? "an operator resets or releases the seat"
                                                                                     : "its client went away")
                                      : 0;
                if (cancel_deadline && now_monotonic_ms() >= cancel_deadline)
                        return seat_error_set(ret_error, ETIMEDOUT, "the agent did not end %u forwarded connections in time",
                                              t->n_streams);
                if (!cancel) {
                        Request *f;
                        while ((f = job_inbox_pop(t->req)))
                                if ((r = handle_follow(t, agent, f, ret_error)) < 0)
                                        return r;
                        int64_t now = now_monotonic_ms();
                        for (Stream *s = t->streams; s; s = s->next)
                                if (s->connected && now - s->last_ms > t->idle_ms &&
                                    (r = kill_stream(t, agent, s, "idle")) < 0)
                                        return seat_error_set(ret_error, -r, "send kill to agent: %s", strerror(-r));
                }
                _cleanup_agent_msg_ AgentMsg *m = NULL;
                r = agent_client_recv_or_wake(agent, FORWARD_TICK_MS, cancel ? -EBADF : job_inbox_fd(t->req), &m);
                if (r == -EAGAIN || r == -ETIMEDOUT)
                        continue;
                if (r == -EPROTO)
                        return seat_error_set(ret_error, EPROTO, "agent broke the protocol: it sent %s",
                                              agent_client_violation(agent));
                if (r < 0)
                        return seat_error_set(ret_error, -r, "read from agent: %s", strerror(-r));
                if ((r = handle_agent(t, m, ret_error)) < 0)
                        return r;
        }
}

/* Whatever is still owed an answer when the session failed. */
static void tunnel_abandon(Tunnel *t, const char *code, const char *why) {
        while (t->pending) {
                Pending *p = t->pending;
                t->pending = p->next;
                if (p->follow)
                        job_reply_error(p->follow, code, "%s", why);
                free(p);
        }
        while (t->streams) {
                Stream *s = t->streams;
                s->close_reason = s->close_reason ? s->close_reason : "error";
                stream_end(t, s, "failed", why);
        }
        while (t->waiting) {
                Request *f = t->waiting;
                t->waiting = f->inbox_next;
                f->inbox_next = NULL;
                job_reply_error(f, code, "%s", why);
        }
}

static int forward_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        Tunnel *t = data;
        t->req = req;
        int r = 0;

        log_notice("forward seat=%s uid=%u target=%s:%" PRId64 " opened", seat_id(t->seat), (unsigned) req->uid, t->host, t->port);
        for (;;) {
                if (job_cancelled(req)) {
                        r = seat_error_set(ret_error, ECANCELED, "forward to %s:%" PRId64 " cancelled: its client went away",
                                           t->host, t->port);
                        tunnel_abandon(t, CONTROL_ERR_CANCELLED, (*ret_error)->message);
                        break;
                }
                struct pollfd p = { .fd = job_inbox_fd(req), .events = POLLIN };
                (void) poll(&p, 1, FORWARD_TICK_MS);
                Request *f;
                while ((f = job_inbox_pop(req))) {
                        if (strcmp(f->method, "seat.forward.open")) {
                                job_reply_error(f, CONTROL_ERR_NOT_FOUND, "no open stream on forward %lld", (long long) req->id);
                                continue;
                        }
                        Request **tail = &t->waiting;
                        while (*tail)
                                tail = &(*tail)->inbox_next;
                        *tail = f;
                }
                if (!t->waiting)
                        continue;
                /* Authorised for the session of its arrival: a reset since ends the tunnel. */
                r = seat_agent_session(t->seat, &t->ticket, AGENT_CAP_TCP, tunnel_session, t, ret_error);
                if (r < 0) {
                        tunnel_abandon(t, r == -ECANCELED ? CONTROL_ERR_CANCELLED : seat_error_to_code(*ret_error),
                                       *ret_error ? (*ret_error)->message : strerror(-r));
                        break;
                }
        }
        job_inbox_close(req);
        log_notice("forward seat=%s uid=%u target=%s:%" PRId64 " ended: %s", seat_id(t->seat), (unsigned) req->uid, t->host,
                   t->port, *ret_error ? (*ret_error)->message : "?");
        return r;
}

/* ---- methods (loop thread) ---- */

static int seat_forward_method(Request *req) {
        const char *id = NULL, *token = NULL, *host = NULL;
        int64_t port = 0;
        if (json_get_string(req->params, "seat", true, SEAT_ID_MAX, &id) < 0 ||
            json_get_string(req->params, "host", true, AGENT_CONNECT_HOST_MAX, &host) < 0 ||
            json_get_int64(req->params, "port", true, 1, 65535, &port) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "seat.forward needs 'seat', 'host' (an address as the guest sees it, ≤ %d bytes) and 'port' (1..65535)",
                                           AGENT_CONNECT_HOST_MAX);
        /* The same rule the agent codec applies: a message that would not format is refused here. */
        AgentMsg probe = { .type = AGENT_MSG_CONNECT, .id = 1, .connect = { .host = (char *) host, .port = port } };
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (agent_msg_format(&probe, AGENT_MAX_FRAME_MIN, &line, &len) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'host' must be an address (letters, digits, '.-_:')");
        (void) json_get_string(req->params, "token", false, 256, &token);
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(request_manager(req)->seats, id);
        SeatTicket ticket = {};
        if (!req->operator && (!s || seat_authorize(s, token, false, &ticket) < 0))
                return request_reply_error(req, CONTROL_ERR_DENIED, "this token does not open seat '%s'", id);
        if (!s) {
                _cleanup_free_ char *e = log_escape(id, strlen(id), 64);
                return request_reply_error(req, CONTROL_ERR_NOT_FOUND, "no seat '%s' (see 'seatctl list')", e ? e : "?");
        }
        if (req->operator)
                (void) seat_authorize(s, NULL, true, &ticket);
        /* Asked for an agent's tool call (seatctl mcp's forward_port): recorded before the
         * tunnel exists, like every tool call; its connections get their own records. */
        _cleanup_json_ json_object *tool = NULL;
        _cleanup_error_ SeatError *err = NULL;
        if (exec_tool_record(req->params, &tool, &err) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "%s", err ? err->message : "bad 'tool'");
        if (tool) {
                _cleanup_json_ json_object *rec = exec_tool_call_record(tool, req->uid, req->operator, ticket.generation,
                                                                        "seat.forward");
                if (rec) {
                        json_object_object_add(rec, "host", json_object_new_string(host));
                        json_object_object_add(rec, "port", json_object_new_int64(port));
                }
                if (!rec || seat_audit(s, "tool.call", rec) < 0)
                        return request_reply_error(req, CONTROL_ERR_IO,
                                                   "this tool call cannot be recorded in seat '%s''s audit log: it was not run", id);
        }
        const SeatConfig *c = request_manager(req)->config;
        Tunnel *t = calloc(1, sizeof(*t));
        if (!t || !(t->host = strdup(host))) {
                free(t);
                return -ENOMEM;
        }
        t->seat = TAKE_PTR(s);
        t->ticket = ticket;
        t->port = port;
        t->max_streams = c->forward_max_connections;
        t->idle_ms = (int64_t) c->forward_idle_timeout * 1000;
        int r = request_open_inbox(req);
        if (r < 0) {
                tunnel_free(t);
                return r;
        }
        return request_start_job(req, forward_job, t, tunnel_free);
}

/* The follow-ups, checked here and passed to the tunnel's job (request_forward). */
static int forward_follow_method(Request *req) {
        int64_t target = 0, stream = 0;
        if (json_get_int64(req->params, "forward", true, 1, (int64_t) 1 << 53, &target) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'%s' needs 'forward', the id of a running seat.forward "
                                                                     "on this connection", req->method);
        if (strcmp(req->method, "seat.forward.open") &&
            json_get_int64(req->params, "stream", true, 1, (int64_t) 1 << 53, &stream) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'%s' needs 'stream', the id of its seat.forward.open",
                                           req->method);
        if (!strcmp(req->method, "seat.forward.send")) {
                _cleanup_free_ void *data = NULL;
                size_t len = 0;
                bool eof = false;
                if (json_get_base64(req->params, "data", false, FORWARD_SEND_MAX, &data, &len) < 0 ||
                    json_get_bool(req->params, "eof", false, &eof) < 0)
                        return request_reply_error(req, CONTROL_ERR_INVALID,
                                                   "seat.forward.send takes 'data' (base64, ≤ %u bytes) and 'eof' (bool)",
                                                   FORWARD_SEND_MAX);
        }
        return request_forward(req, target);
}

static const Method forward_methods[] = {
        { "seat.forward", seat_forward_method, false, false },
        { "seat.forward.open", forward_follow_method, false, false },
        { "seat.forward.send", forward_follow_method, false, false },
        { "seat.forward.close", forward_follow_method, false, false },
};

int forward_methods_init(Manager *m, SeatError **ret_error) {
        return server_add_methods(m->server, forward_methods, ELEMENTSOF(forward_methods));
}
