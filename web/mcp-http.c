/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * MCP over Streamable HTTP: seat-web checks who asks (the bearer token, with seatd, on
 * every POST), and `seatctl mcp` answers (one child per session). seat-web reads only what
 * it needs to route: the message's kind, its id, its progress token.
 *
 *   POST /mcp/SEAT  initialize, no Mcp-Session-Id: a new session; its id in the response
 *                   a request: its response (and its progress) as text/event-stream
 *                   a notification or a response: 202
 *   DELETE /mcp/SEAT  ends the session (its child killed)
 *   GET /mcp/SEAT   405: the server sends nothing unasked
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "mcp-child.h"
#include "mcp-http.h"
#include "seatctl/mcp.h"
#include "slots.h"

#define SESSION_HEADER "mcp-session-id:"
#define VERSION_HEADER "mcp-protocol-version:"
#define CHILD_LINE_MAX (8u * 1024u * 1024u) /* seatctl's largest reply: a read_file of 1 MiB, base64 */
#define STREAMS_MAX 16u                      /* open requests of one session (seatctl runs 8 calls) */
#define OUT_MAX (32u * 1024u * 1024u)         /* unread SSE bytes of one stream: past it, closed */
#define WRITE_CHUNK 16384u
/* What waits for a child's stdin: two of the largest messages, and room for the
 * cancellations seat-web itself sends when a client closes its stream. A child that takes
 * none of it for CHILD_STALL_MS has hung: its session ends (by the sweep, never by
 * waiting on the loop). */
#define CHILD_QUEUE_MAX(w) (2u * (size_t) (w)->conf->mcp_max_body)
#define CANCEL_RESERVE (STREAMS_MAX * 1024u)
#define CHILD_STALL_MS 30000
#define SWEEP_USEC (5 * LWS_USEC_PER_SEC)
#define CHECK_MS 30000 /* how often seatd is asked whether an idle session's token still works */
#define ENDED_MAX 64   /* sessions a reset ended, remembered to say so to their next request */
#define ENDED_MS (3600 * 1000)

struct McpSession {
        McpSession *next;
        char id[WEB_SESSION_ID_LEN + 1];
        char seat[WEB_SEAT_ID_MAX + 1];
        char token[WEB_TOKEN_HEX + 1];
        int64_t generation;
        int64_t last_ms;
        int64_t checked_ms;   /* seatd last asked, by a POST or the sweep */
        bool checking;        /* a JOB_MCP_CHECK is out */
        McpChild child;
        struct lws *pipe; /* its stdout in the event loop */
        struct lws *in_pipe; /* a dup of its stdin in the event loop: POLLOUT drains child.in */
        int64_t in_moved_ms;  /* child.in last went from empty or was written to */
        FrameReader *reader;
        Conn *streams;    /* POSTs waiting for their response */
        unsigned n_streams;
};

/* A session a reset (or a release) ended: its next request is told so, not just 404. */
typedef struct McpEnded {
        char id[WEB_SESSION_ID_LEN + 1];
        char seat[WEB_SEAT_ID_MAX + 1];
        int64_t at_ms;
} McpEnded;

struct McpTable {
        lws_sorted_usec_list_t sul; /* first: the sweep finds the table from it */
        Web *w;
        struct lws_context *ctx;
        McpSession *sessions;
        size_t count;
        McpEnded ended[ENDED_MAX];  /* a ring */
        size_t ended_next;
};

static void sweep(lws_sorted_usec_list_t *sul);

McpTable *mcp_table_new(Web *w, struct lws_context *ctx) {
        McpTable *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->w = w;
        t->ctx = ctx;
        lws_sul_schedule(ctx, 0, &t->sul, sweep, SWEEP_USEC);
        return t;
}

/* ---------------------------------------------------------------- event streams */

static int out_append(Conn *c, const char *a, size_t alen, const char *b, size_t blen, const char *z, size_t zlen) {
        size_t need = c->out_len - c->out_off + alen + blen + zlen;
        if (need > OUT_MAX)
                return -ENOBUFS;
        if (c->out_off > 0) {
                memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
                c->out_len -= c->out_off;
                c->out_off = 0;
        }
        char *n = realloc(c->out, need ? need : 1);
        if (!n)
                return -ENOMEM;
        c->out = n;
        memcpy(c->out + c->out_len, a, alen);
        memcpy(c->out + c->out_len + alen, b, blen);
        memcpy(c->out + c->out_len + alen + blen, z, zlen);
        c->out_len += alen + blen + zlen;
        return 0;
}

/* One JSON-RPC message (a line without '\n') as an SSE event on the stream. */
static void stream_send(Conn *c, const char *line, size_t len, bool last) {
        if (out_append(c, "event: message\ndata: ", 21, line, len, "\n\n", 2) < 0) {
                log_warning("MCP stream: a client that does not read its events: closed");
                c->out_last = true;
                c->out_len = c->out_off = 0;
        }
        if (last)
                c->out_last = true;
        lws_callback_on_writable(c->wsi);
}

static void stream_unlink(McpSession *s, Conn *c) {
        for (Conn **p = &s->streams; *p; p = &(*p)->mcp_next)
                if (*p == c) {
                        *p = c->mcp_next;
                        s->n_streams--;
                        break;
                }
        c->mcp_next = NULL;
        c->mcp = NULL;
}

/* Answers the stream's request with a JSON-RPC error and ends it. */
static void stream_fail(Conn *c, int code, const char *message) {
        _cleanup_json_ json_object *id = json_tokener_parse(c->id_json);
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (mcp_format_error(id, code, message, &line, &len) == 0)
                stream_send(c, line, len - 1, true);
        else {
                c->out_last = true;
                lws_callback_on_writable(c->wsi);
        }
}

/* ---------------------------------------------------------------- sessions */

static McpSession *session_by_id(McpTable *t, const char *id) {
        for (McpSession *s = t->sessions; s; s = s->next)
                if (sodium_memcmp(s->id, id, WEB_SESSION_ID_LEN) == 0)
                        return s;
        return NULL;
}

static size_t sessions_of_seat(McpTable *t, const char *seat) {
        size_t n = 0;
        for (McpSession *s = t->sessions; s; s = s->next)
                n += !strcmp(s->seat, seat);
        return n;
}

/* A pipe's wsi, no longer the session's: closed by the loop, soon, with its fd. */
static void pipe_drop(struct lws *pipe) {
        lws_set_opaque_user_data(pipe, NULL);
        lws_set_timeout(pipe, PENDING_TIMEOUT_KILLED_BY_PARENT, LWS_TO_KILL_ASYNC);
}

/* Ends the session: its child killed (seatd then kills what runs for it), every waiting
 * stream answered with why. */
static void session_end(McpTable *t, McpSession *s, const char *why) {
        for (McpSession **p = &t->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        t->count--;
                        break;
                }
        log_info("MCP session of seat '%s' ended: %s (%zu sessions)", s->seat, why, t->count);
        while (s->streams) {
                Conn *c = s->streams;
                stream_unlink(s, c);
                char msg[256];
                snprintf(msg, sizeof(msg), "The MCP session has ended: %s", why);
                stream_fail(c, MCP_INTERNAL_ERROR, msg);
        }
        if (s->pipe)
                pipe_drop(s->pipe);
        else
                safe_close(s->child.out_fd);
        if (s->in_pipe)
                pipe_drop(s->in_pipe);
        mcp_child_kill(&s->child);
        frame_reader_free(s->reader);
        sodium_memzero(s, sizeof(*s));
        free(s);
}

/* The seat was reset or released: seatd refused the session's token (or the seat has a new
 * generation). The session ends, and its id is remembered to tell its next request why. */
static void session_end_reset(McpTable *t, McpSession *s) {
        McpEnded *e = &t->ended[t->ended_next++ % ENDED_MAX];
        memcpy(e->id, s->id, sizeof(e->id));
        memcpy(e->seat, s->seat, sizeof(e->seat));
        e->at_ms = now_monotonic_ms();
        session_end(t, s, "the seat was reset or released: seatd no longer accepts its token");
}

static const McpEnded *ended_by_id(McpTable *t, const char *id, const char *seat) {
        int64_t now = now_monotonic_ms();
        for (size_t i = 0; i < ENDED_MAX; i++)
                if (t->ended[i].id[0] && now - t->ended[i].at_ms < ENDED_MS &&
                    sodium_memcmp(t->ended[i].id, id, WEB_SESSION_ID_LEN) == 0 && !strcmp(t->ended[i].seat, seat))
                        return &t->ended[i];
        return NULL;
}

void mcp_table_free(McpTable *t) {
        if (!t)
                return;
        lws_sul_cancel(&t->sul);
        while (t->sessions) {
                McpSession *s = t->sessions;
                t->sessions = s->next;
                for (Conn *c = s->streams; c; c = c->mcp_next)
                        c->mcp = NULL;
                if (s->pipe)
                        lws_set_opaque_user_data(s->pipe, NULL);
                else
                        safe_close(s->child.out_fd);
                if (s->in_pipe)
                        lws_set_opaque_user_data(s->in_pipe, NULL);
                mcp_child_kill(&s->child);
                frame_reader_free(s->reader);
                sodium_memzero(s, sizeof(*s));
                free(s);
        }
        free(t);
}

static void sweep(lws_sorted_usec_list_t *sul) {
        McpTable *t = lws_container_of(sul, McpTable, sul);
        int64_t now = now_monotonic_ms();
        McpSession *next;
        for (McpSession *s = t->sessions; s; s = next) {
                next = s->next;
                if (s->n_streams == 0 && now - s->last_ms > t->w->conf->mcp_idle_timeout * 1000) {
                        session_end(t, s, "idle");
                        continue;
                }
                if (s->child.in.len > 0 && now - s->in_moved_ms > CHILD_STALL_MS) {
                        session_end(t, s, "its seatctl mcp stopped reading");
                        continue;
                }
                /* A session its client leaves alone is asked of seatd too: a reset ends it
                 * (and kills its seatctl mcp) without waiting for the next request. */
                if (!s->checking && now - s->checked_ms >= CHECK_MS) {
                        Job *job = job_new(JOB_MCP_CHECK, NULL, s->seat, s->token);
                        if (!job)
                                continue;
                        memcpy(job->session, s->id, sizeof(job->session));
                        if (jobs_submit(t->w->jobs, job) < 0)
                                job_free(job); /* busy: the next sweep asks again */
                        else
                                s->checking = true;
                }
        }
        lws_sul_schedule(t->ctx, 0, &t->sul, sweep, SWEEP_USEC);
}

/* A session that never started: its reader, and its copy of the token wiped. */
static McpSession *session_free_unstarted(McpSession *s) {
        if (!s)
                return NULL;
        frame_reader_free(s->reader);
        sodium_memzero(s, sizeof(*s));
        return mfree(s);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(McpSession *, session_free_unstarted)

static int session_new(McpTable *t, struct lws *wsi, const char *seat, const char *token, int64_t generation,
                       McpSession **ret) {
        const WebConfig *conf = t->w->conf;
        _cleanup_(session_free_unstartedp) McpSession *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->reader = frame_reader_new(CHILD_LINE_MAX);
        if (!s->reader)
                return -ENOMEM;
        slot_random_id(s->id);
        snprintf(s->seat, sizeof(s->seat), "%.*s", WEB_SEAT_ID_MAX, seat);
        snprintf(s->token, sizeof(s->token), "%s", token);
        s->generation = generation;
        s->last_ms = s->checked_ms = now_monotonic_ms();
        int r = mcp_child_spawn(conf->seatctl, conf->participant_socket, conf->mcp_user, seat, token, &s->child);
        if (r < 0) {
                log_error("cannot start '%s mcp %s': %s", conf->seatctl, seat, strerror(-r));
                return r;
        }
        /* Its stdin is watched through a dup: the wsi closes the dup, mcp_child_kill the
         * original, and neither closes the other's. */
        lws_sock_file_fd_type in = { .filefd = fcntl(s->child.in_fd, F_DUPFD_CLOEXEC, 3) };
        if (in.filefd >= 0)
                s->in_pipe = lws_adopt_descriptor_vhost(lws_get_vhost(wsi), LWS_ADOPT_RAW_FILE_DESC, in, "mcp-child", NULL);
        if (!s->in_pipe) {
                log_error("cannot watch the input of '%s mcp %s'", conf->seatctl, seat);
                safe_close(in.filefd);
                safe_close(s->child.out_fd);
                mcp_child_kill(&s->child);
                return -ENOMEM;
        }
        lws_set_opaque_user_data(s->in_pipe, s);
        lws_sock_file_fd_type fd = { .filefd = s->child.out_fd };
        s->pipe = lws_adopt_descriptor_vhost(lws_get_vhost(wsi), LWS_ADOPT_RAW_FILE_DESC, fd, "mcp-child", NULL);
        if (!s->pipe) {
                log_error("cannot watch the output of '%s mcp %s'", conf->seatctl, seat);
                pipe_drop(s->in_pipe);
                safe_close(s->child.out_fd);
                mcp_child_kill(&s->child);
                return -ENOMEM;
        }
        lws_set_opaque_user_data(s->pipe, s);
        s->next = t->sessions;
        t->sessions = s;
        t->count++;
        log_info("MCP session of seat '%s' started: seatctl mcp pid %d (%zu sessions)", seat, (int) s->child.pid, t->count);
        *ret = TAKE_PTR(s);
        return 0;
}

/* ---------------------------------------------------------------- the child's input */

/* Writes what the pipe takes now; the rest when the loop sees POLLOUT. */
static int child_flush(McpSession *s) {
        size_t before = s->child.in.len;
        int r = mcp_child_flush(&s->child);
        if (s->child.in.len < before)
                s->in_moved_ms = now_monotonic_ms();
        if (r == -EAGAIN) {
                lws_callback_on_writable(s->in_pipe);
                return 0;
        }
        return r;
}

/* One line for the child, after all that is queued: -ENOBUFS when max bytes wait already
 * (nothing queued), -EPIPE when it is gone. */
static int child_send(McpSession *s, const char *line, size_t len, size_t max) {
        if (s->child.in.len == 0)
                s->in_moved_ms = now_monotonic_ms();
        int r = mcp_child_queue(&s->child, line, len, max);
        return r < 0 ? r : child_flush(s);
}

/* ---------------------------------------------------------------- the child's output */

/* One line from seatctl mcp: to the stream of the request it answers or reports on. */
static void child_line(McpSession *s, const char *line, size_t len) {
        McpMessage m = {};
        McpRpcError err = {};
        char key[300];
        Conn *to = NULL;
        bool last = false;

        if (mcp_message_parse(line, len, &m, &err) == 0) {
                json_object *tok;
                if (m.kind == MCP_RESPONSE && mcp_id_key(m.id, key, sizeof(key)) == 0) {
                        for (Conn *c = s->streams; c && !to; c = c->mcp_next)
                                if (!strcmp(c->id_key, key))
                                        to = c;
                        last = true;
                } else if (m.kind == MCP_NOTIFICATION && !strcmp(m.method, "notifications/progress") && m.params &&
                           json_object_object_get_ex(m.params, "progressToken", &tok) &&
                           mcp_id_key(tok, key, sizeof(key)) == 0) {
                        for (Conn *c = s->streams; c && !to; c = c->mcp_next)
                                if (c->progress_key[0] && !strcmp(c->progress_key, key))
                                        to = c;
                }
        }
        mcp_message_done(&m);
        if (!to) {
                /* A reply to a request whose stream has gone (cancelled, closed). */
                log_debug("MCP session of seat '%s': a message for no open stream, dropped", s->seat);
                return;
        }
        if (last)
                stream_unlink(s, to);
        stream_send(to, line, len, last);
}

int mcp_child_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
        Web *w = lws_context_user(lws_get_context(wsi));
        McpSession *s = lws_get_opaque_user_data(wsi);

        switch (reason) {
        case LWS_CALLBACK_RAW_RX_FILE: {
                if (!s)
                        return -1;
                ssize_t n = frame_reader_fill(s->reader, (int) lws_get_socket_fd(wsi));
                if (n == -EAGAIN || n == -EINTR)
                        return 0;
                for (;;) {
                        const char *frame;
                        size_t flen;
                        int r = frame_reader_next(s->reader, &frame, &flen);
                        if (r == -E2BIG) {
                                log_warning("MCP session of seat '%s': a line of seatctl mcp over %u bytes, dropped", s->seat,
                                            CHILD_LINE_MAX);
                                continue;
                        }
                        if (r <= 0)
                                break;
                        child_line(s, frame, flen);
                }
                if (n <= 0) {
                        /* seatctl mcp ended (or its pipe broke): the session with it. */
                        s->pipe = NULL;
                        s->child.out_fd = -EBADF; /* libwebsockets closes it with the wsi */
                        lws_set_opaque_user_data(wsi, NULL);
                        session_end(w->mcp, s, "its seatctl mcp exited");
                        return -1;
                }
                return 0;
        }
        case LWS_CALLBACK_RAW_WRITEABLE_FILE: {
                if (!s || wsi != s->in_pipe)
                        return 0;
                int r = child_flush(s);
                if (r < 0) {
                        s->in_pipe = NULL; /* closed by the -1 */
                        lws_set_opaque_user_data(wsi, NULL);
                        session_end(w->mcp, s, "its seatctl mcp is gone");
                        return -1;
                }
                return 0;
        }
        case LWS_CALLBACK_RAW_CLOSE_FILE:
                if (s) {
                        if (wsi == s->in_pipe)
                                s->in_pipe = NULL; /* (its fd a dup: child.in_fd stays mcp_child_kill's) */
                        else {
                                s->pipe = NULL;
                                s->child.out_fd = -EBADF;
                        }
                        lws_set_opaque_user_data(wsi, NULL);
                        session_end(w->mcp, s, "its seatctl mcp exited");
                }
                return 0;
        /* The protocol is in the listening vhost's list only so that the pipes can be
         * adopted into it: a client that names "mcp-child" in Sec-WebSocket-Protocol must
         * not get a WebSocket (it would hold a connection with no session, no Origin check
         * and no timeout; a few hundred of them fill max_connections). */
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
                log_info("refused: a WebSocket that asked for the internal protocol 'mcp-child'");
                return -1;
        case LWS_CALLBACK_ESTABLISHED:
        case LWS_CALLBACK_RECEIVE:
        case LWS_CALLBACK_HTTP:
                return -1;
        default:
                return 0;
        }
}

/* ---------------------------------------------------------------- requests */

static int rpc_error(struct lws *wsi, Web *w, Conn *c, unsigned status, json_object *id, int code, const char *message) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        if (mcp_format_error(id, code, message, &line, &len) < 0)
                return -1;
        return web_respond(wsi, w, c, status, "application/json", line, len, NULL, NULL);
}

/* Origin, when a browser sends one (DNS rebinding): https://HOST of this request; in the
 * plain-HTTP loopback mode only a loopback name, which no other site's DNS can take. */
static bool origin_ok(struct lws *wsi, Web *w) {
        char origin[256], host[256], want[300];
        if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0)
                return true;
        if (lws_hdr_copy(wsi, origin, sizeof(origin), WSI_TOKEN_ORIGIN) < 0 ||
            lws_hdr_copy(wsi, host, sizeof(host), WSI_TOKEN_HOST) <= 0)
                return false;
        if (!w->tls) {
                char *colon = host[0] == '[' ? strchr(host, ']') : strchr(host, ':');
                size_t n = colon ? (size_t) (colon - host) + (host[0] == '[') : strlen(host);
                if (!((n == 9 && !strncmp(host, "localhost", 9)) || (n == 5 && !strncmp(host, "[::1]", 5)) ||
                      (n >= 9 && !strncmp(host, "127.", 4) && strspn(host, "0123456789.") == n)))
                        return false;
        }
        snprintf(want, sizeof(want), "%s://%s", w->tls ? "https" : "http", host);
        return strcmp(origin, want) == 0;
}

static int reset_error(struct lws *wsi, Web *w, Conn *c, const char *seat) {
        char msg[256];
        snprintf(msg, sizeof(msg), "Unauthorized: seat '%s' was reset or released, so its token no longer opens it and "
                                   "this MCP session has ended. Ask the facilitator for the new token.", seat);
        return rpc_error(wsi, w, c, 401, NULL, MCP_INVALID_REQUEST, msg);
}

static bool header_lists(struct lws *wsi, enum lws_token_indexes h, const char *what) {
        char v[512];
        if (lws_hdr_total_length(wsi, h) <= 0 || lws_hdr_copy(wsi, v, sizeof(v), h) < 0)
                return false;
        return strstr(v, what) != NULL;
}

/* 401, charged to limit: the login limit for a wrong token (a failed login), a bucket of
 * its own for a request with none. A client that first asks without one (to find how to
 * authenticate) is no guess: it must not cost the address its logins, nor be refused
 * because the address's logins failed. Past that bucket: 429. */
static int unauthorized(struct lws *wsi, Web *w, Conn *c, RateLimit *limit, const char *what) {
        char peer[64];
        web_peer_key(wsi, peer, sizeof(peer));
        bool over = !rate_limit_take(limit, peer, 1, now_monotonic_ms());
        if (over && limit == w->mcp_unauthenticated) {
                web_log_refusal(wsi, "an MCP request without a bearer token over its rate limit", c->arg);
                return rpc_error(wsi, w, c, 429, NULL, MCP_INVALID_REQUEST, "Too Many Requests: wait a minute");
        }
        web_log_refusal(wsi, what, c->arg);
        return rpc_error(wsi, w, c, 401, NULL, MCP_INVALID_REQUEST,
                         "Unauthorized: send the seat's token as 'Authorization: Bearer TOKEN'");
}

/* 503: the session's server has not read what was sent before (it is busy, or hung: the
 * sweep ends it after CHILD_STALL_MS). */
static int queue_full(struct lws *wsi, Web *w, Conn *c, McpSession *s) {
        char msg[256];
        web_log_refusal(wsi, "an MCP message while its session's server had a full input queue", c->arg);
        snprintf(msg, sizeof(msg),
                 "Service Unavailable: this MCP session's server has not yet read the %zu bytes sent before: "
                 "wait for a running call to answer, then send again", s->child.in.len);
        return rpc_error(wsi, w, c, 503, NULL, MCP_SERVER_BUSY, msg);
}

int mcp_http_request(struct lws *wsi, Web *w, Conn *c) {
        bool post = lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0;
        bool del = lws_hdr_total_length(wsi, WSI_TOKEN_DELETE_URI) > 0;
        char auth[WEB_COOKIE_HEADER_MAX + 1], sid[64] = "", version[32] = "";
        int r;

        /* A kept-alive connection carries the previous request's state: none of it counts. */
        c->wsi = wsi;
        c->mcp_id[0] = c->id_key[0] = c->progress_key[0] = c->id_json[0] = '\0';
        c->mkind = -1;
        free(c->mbody);
        c->mbody = NULL;
        c->mbody_len = c->mbody_want = 0;
        if (!w->conf->mcp)
                return web_respond_text(wsi, w, c, 404, "Not found.\n");
        if (!origin_ok(wsi, w)) {
                web_log_refusal(wsi, "an MCP request from another origin", c->arg);
                return rpc_error(wsi, w, c, 403, NULL, MCP_INVALID_REQUEST, "Forbidden: this Origin may not use the MCP endpoint");
        }
        if (!post && !del)
                return rpc_error(wsi, w, c, 405, NULL, MCP_INVALID_REQUEST,
                                 "Method not allowed: POST JSON-RPC messages, DELETE to end a session (no server-sent stream)");
        int n = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
        if (n <= 0 || n > WEB_COOKIE_HEADER_MAX || lws_hdr_copy(wsi, auth, sizeof(auth), WSI_TOKEN_HTTP_AUTHORIZATION) < 0 ||
            web_bearer_get(auth, strlen(auth), c->bearer, sizeof(c->bearer)) < 0 || !web_token_valid(c->bearer)) {
                sodium_memzero(auth, sizeof(auth));
                sodium_memzero(c->bearer, sizeof(c->bearer));
                return unauthorized(wsi, w, c, w->mcp_unauthenticated, "an MCP request without a well-formed bearer token");
        }
        sodium_memzero(auth, sizeof(auth));
        if (lws_hdr_custom_length(wsi, SESSION_HEADER, (int) strlen(SESSION_HEADER)) > 0) {
                if (lws_hdr_custom_copy(wsi, sid, sizeof(sid), SESSION_HEADER, (int) strlen(SESSION_HEADER)) < 0 ||
                    !web_session_id_valid(sid))
                        return rpc_error(wsi, w, c, 404, NULL, MCP_INVALID_REQUEST, "Session not found: initialize a new one");
                McpSession *s = session_by_id(w->mcp, sid);
                if (!s && ended_by_id(w->mcp, sid, c->arg))
                        return reset_error(wsi, w, c, c->arg);
                if (!s || strcmp(s->seat, c->arg) != 0)
                        return rpc_error(wsi, w, c, 404, NULL, MCP_INVALID_REQUEST, "Session not found: initialize a new one");
                if (sodium_memcmp(s->token, c->bearer, WEB_TOKEN_HEX) != 0)
                        return unauthorized(wsi, w, c, w->per_address, "an MCP request with another token than its session's");
                snprintf(c->mcp_id, sizeof(c->mcp_id), "%s", sid);
        }
        if (del) {
                McpSession *s = c->mcp_id[0] ? session_by_id(w->mcp, c->mcp_id) : NULL;
                if (!s)
                        return rpc_error(wsi, w, c, 400, NULL, MCP_INVALID_REQUEST, "Bad Request: DELETE needs the Mcp-Session-Id header");
                session_end(w->mcp, s, "the client ended it (DELETE)");
                return web_respond(wsi, w, c, 200, "text/plain; charset=utf-8", "\n", 1, NULL, NULL);
        }
        if (lws_hdr_custom_length(wsi, VERSION_HEADER, (int) strlen(VERSION_HEADER)) > 0) {
                bool known = false;
                if (lws_hdr_custom_copy(wsi, version, sizeof(version), VERSION_HEADER, (int) strlen(VERSION_HEADER)) >= 0)
                        for (size_t i = 0; mcp_protocol_versions[i]; i++)
                                known |= !strcmp(version, mcp_protocol_versions[i]);
                if (!known)
                        return rpc_error(wsi, w, c, 400, NULL, MCP_INVALID_REQUEST,
                                         "Bad Request: unsupported MCP-Protocol-Version (this server speaks 2025-11-25, "
                                         "2025-06-18, 2025-03-26, 2024-11-05)");
        }
        if (!header_lists(wsi, WSI_TOKEN_HTTP_ACCEPT, "application/json") ||
            !header_lists(wsi, WSI_TOKEN_HTTP_ACCEPT, "text/event-stream"))
                return rpc_error(wsi, w, c, 406, NULL, MCP_INVALID_REQUEST,
                                 "Not Acceptable: the client must accept application/json and text/event-stream");
        char ctype[128] = "", clen[32] = "";
        if (lws_hdr_copy(wsi, ctype, sizeof(ctype), WSI_TOKEN_HTTP_CONTENT_TYPE) <= 0 ||
            strncmp(ctype, "application/json", 16) != 0 || (ctype[16] && ctype[16] != ';'))
                return rpc_error(wsi, w, c, 415, NULL, MCP_INVALID_REQUEST, "Unsupported Media Type: send application/json");
        if (lws_hdr_copy(wsi, clen, sizeof(clen), WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0)
                return rpc_error(wsi, w, c, 411, NULL, MCP_INVALID_REQUEST, "Length Required: send a Content-Length");
        char *end = NULL;
        errno = 0;
        unsigned long len = strtoul(clen, &end, 10);
        if (errno || *end || clen[0] < '0' || clen[0] > '9' || len > (unsigned long) w->conf->mcp_max_body) {
                char msg[128];
                snprintf(msg, sizeof(msg), "Payload Too Large: a message is at most %ld bytes here", w->conf->mcp_max_body);
                return rpc_error(wsi, w, c, 413, NULL, MCP_INVALID_REQUEST, msg);
        }
        if (len == 0)
                return rpc_error(wsi, w, c, 400, NULL, MCP_PARSE_ERROR, "Parse error: an empty body");
        McpSession *s = c->mcp_id[0] ? session_by_id(w->mcp, c->mcp_id) : NULL;
        if (s && s->child.in.len > 0 && s->child.in.len + len > CHILD_QUEUE_MAX(w))
                /* Refused before its body is read: a client that posts into a full queue
                 * costs a header, not megabytes of TLS and JSON. */
                return queue_full(wsi, w, c, s);
        c->mbody = malloc(len + 1);
        if (!c->mbody)
                return -1;
        c->mbody_want = len;
        c->mbody_len = 0;
        /* The body must follow promptly: a trickle is dropped. */
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int) w->conf->idle_timeout);
        r = 0;
        return r;
}

int mcp_http_body(Conn *c, const void *in, size_t len) {
        return web_body_append(c->mbody, c->mbody_want, &c->mbody_len, in, len);
}

int mcp_http_body_done(struct lws *wsi, Web *w, Conn *c) {
        McpMessage m = {};
        McpRpcError err = {};
        int r;

        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        if (!c->mbody || c->mbody_len != c->mbody_want)
                return rpc_error(wsi, w, c, 400, NULL, MCP_PARSE_ERROR, "Parse error: the body is shorter than its Content-Length");
        r = mcp_message_parse(c->mbody, c->mbody_len, &m, &err);
        if (r == -ENOMEM)
                return -1;
        if (r < 0) {
                r = rpc_error(wsi, w, c, 400, err.id, err.code, err.message);
                mcp_message_done(&m);
                return r;
        }
        c->mkind = (int) m.kind;
        c->id_key[0] = c->progress_key[0] = c->id_json[0] = '\0';
        if (m.kind == MCP_REQUEST) {
                json_object *meta, *tok;
                if (mcp_id_key(m.id, c->id_key, sizeof(c->id_key)) < 0)
                        goto bad_id;
                snprintf(c->id_json, sizeof(c->id_json), "%s", json_object_to_json_string_ext(m.id, JSON_C_TO_STRING_PLAIN));
                if (m.params && json_object_object_get_ex(m.params, "_meta", &meta) &&
                    json_object_object_get_ex(meta, "progressToken", &tok) && mcp_id_key(tok, c->progress_key, sizeof(c->progress_key)) < 0)
                        c->progress_key[0] = '\0'; /* seatctl refuses the call itself, saying why */
        } else if (m.kind == MCP_NOTIFICATION && !strcmp(m.method, "notifications/cancelled")) {
                json_object *rid;
                /* The cancelled request's stream ends here: seatctl sends no response. */
                if (m.params && json_object_object_get_ex(m.params, "requestId", &rid) &&
                    mcp_id_key(rid, c->id_key, sizeof(c->id_key)) < 0)
                        c->id_key[0] = '\0';
        }
        if (!c->mcp_id[0] && !(m.kind == MCP_REQUEST && !strcmp(m.method, "initialize"))) {
                r = rpc_error(wsi, w, c, 400, m.id, MCP_INVALID_REQUEST,
                              "Bad Request: no Mcp-Session-Id header: send 'initialize' first to open a session");
                mcp_message_done(&m);
                return r;
        }
        /* One line for seatctl mcp (the client may have sent it pretty-printed). */
        const char *line = json_object_to_json_string_ext(m.root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        size_t len = strlen(line);
        char *copy = malloc(len + 2);
        if (!copy) {
                mcp_message_done(&m);
                return -1;
        }
        memcpy(copy, line, len);
        copy[len] = '\n';
        copy[len + 1] = '\0';
        free(c->mbody);
        c->mbody = copy;
        c->mbody_len = len + 1;
        mcp_message_done(&m);

        if (!c->mcp_id[0]) {
                /* A new session is a login, limited as logins are: charged now, given back
                 * in mcp_http_finish() unless seatd refuses the token. */
                char peer[64];
                web_peer_key(wsi, peer, sizeof(peer));
                if (login_limit_take(w->per_address, w->per_seat, LOGIN_TOKEN, peer, c->arg, now_monotonic_ms(), &c->login) < 0) {
                        web_log_refusal(wsi, "an MCP session over the login rate limit", c->arg);
                        return rpc_error(wsi, w, c, 429, NULL, MCP_INVALID_REQUEST, "Too Many Requests: wait a minute");
                }
        }
        Job *job = job_new(JOB_MCP, wsi, c->arg, c->bearer);
        if (job)
                snprintf(job->session, sizeof(job->session), "%s", c->mcp_id);
        r = web_submit(wsi, w, c, job);
        if (!c->job)
                login_limit_settle(&c->login, false, now_monotonic_ms()); /* not tried */
        return r;

bad_id:
        r = rpc_error(wsi, w, c, 400, NULL, MCP_INVALID_REQUEST, "Invalid Request: the id is too long");
        mcp_message_done(&m);
        return r;
}

/* 200 with text/event-stream: the response and the request's progress follow as events. */
static int stream_open(struct lws *wsi, Web *w, Conn *c, McpSession *s, bool initialize) {
        unsigned char buf[LWS_PRE + 2048], *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
        if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, "text/event-stream", LWS_ILLEGAL_HTTP_CONTENT_LEN, &p, end) ||
            web_add_security_headers(wsi, w, &p, end))
                return -1;
        if (initialize && lws_add_http_header_by_name(wsi, (const unsigned char *) SESSION_HEADER,
                                                      (const unsigned char *) s->id, (int) strlen(s->id), &p, end))
                return -1;
        if (lws_finalize_write_http_header(wsi, start, &p, end))
                return -1;
        c->mcp = s;
        c->mcp_next = s->streams;
        s->streams = c;
        s->n_streams++;
        return 0;
}

int mcp_http_finish(struct lws *wsi, Web *w, Conn *c, Job *job) {
        McpTable *t = w->mcp;
        McpSession *s = NULL;
        json_object *gen;
        int64_t generation = -1;
        int r;

        login_limit_settle(&c->login, web_login_failed(job), now_monotonic_ms()); /* (a new session's) */
        if (job->r == 0 && json_object_object_get_ex(job->rec, "generation", &gen))
                generation = json_object_get_int64(gen);
        if (c->mcp_id[0]) {
                s = session_by_id(t, c->mcp_id);
                if (!s && ended_by_id(t, c->mcp_id, c->arg))
                        return reset_error(wsi, w, c, c->arg);
                if (!s)
                        return rpc_error(wsi, w, c, 404, NULL, MCP_INVALID_REQUEST, "Session not found: initialize a new one");
                if (job->r == -EACCES || (job->r == 0 && generation != s->generation)) {
                        session_end_reset(t, s);
                        return reset_error(wsi, w, c, c->arg);
                }
                if (job->r == 0)
                        s->checked_ms = now_monotonic_ms();
        } else if (job->r == -EACCES) {
                web_log_refusal(wsi, "an MCP session with a token seatd refused", c->arg);
                char msg[160];
                snprintf(msg, sizeof(msg), "Unauthorized: this token does not open seat '%s'", c->arg);
                return rpc_error(wsi, w, c, 401, NULL, MCP_INVALID_REQUEST, msg);
        }
        if (job->r < 0)
                return rpc_error(wsi, w, c, 503, NULL, MCP_INTERNAL_ERROR, "seatd cannot be reached now: try again in a moment");

        bool initialize = !s;
        if (!s) {
                if (t->count >= (size_t) w->conf->mcp_max_sessions ||
                    sessions_of_seat(t, c->arg) >= (size_t) w->conf->mcp_sessions_per_seat) {
                        web_log_refusal(wsi, "an MCP session over the session caps", c->arg);
                        return rpc_error(wsi, w, c, 503, NULL, MCP_INTERNAL_ERROR,
                                         "Too many MCP sessions (for this seat or in all): end one (DELETE) or wait for one to time out");
                }
                r = session_new(t, wsi, c->arg, c->bearer, generation, &s);
                if (r < 0)
                        return rpc_error(wsi, w, c, 503, NULL, MCP_INTERNAL_ERROR, "cannot start the MCP server for this seat");
        }
        s->last_ms = now_monotonic_ms();
        if (c->mkind == MCP_REQUEST) {
                for (Conn *o = s->streams; o; o = o->mcp_next)
                        if (!strcmp(o->id_key, c->id_key))
                                return rpc_error(wsi, w, c, 400, NULL, MCP_INVALID_REQUEST,
                                                 "Invalid Request: a request with this id is still running");
                if (s->n_streams >= STREAMS_MAX)
                        return rpc_error(wsi, w, c, 429, NULL, MCP_INVALID_REQUEST, "Too Many Requests: wait for one to end");
        }
        r = child_send(s, c->mbody, c->mbody_len, CHILD_QUEUE_MAX(w));
        free(c->mbody); /* the child has it (or it was refused) */
        c->mbody = NULL;
        if (r == -ENOBUFS)
                return queue_full(wsi, w, c, s);
        if (r < 0) {
                session_end(t, s, r == -ENOMEM ? "out of memory" : "its seatctl mcp is gone");
                return rpc_error(wsi, w, c, 503, NULL, MCP_INTERNAL_ERROR, "The MCP session has ended: its server stopped");
        }
        if (c->mkind != MCP_REQUEST) {
                if (c->mkind == MCP_NOTIFICATION && c->id_key[0])
                        for (Conn *o = s->streams; o; o = o->mcp_next)
                                if (!strcmp(o->id_key, c->id_key)) {
                                        stream_unlink(s, o);
                                        o->out_last = true;
                                        lws_callback_on_writable(o->wsi);
                                        break;
                                }
                return web_respond(wsi, w, c, 202, "text/plain; charset=utf-8", "\n", 1, NULL, NULL);
        }
        return stream_open(wsi, w, c, s, initialize);
}

void mcp_http_checked(Web *w, Job *job) {
        McpSession *s = session_by_id(w->mcp, job->session);
        json_object *gen;
        if (!s || strcmp(s->seat, job->seat) != 0)
                return; /* ended meanwhile */
        s->checking = false;
        s->checked_ms = now_monotonic_ms();
        if (job->r == -EACCES ||
            (job->r == 0 && json_object_object_get_ex(job->rec, "generation", &gen) && json_object_get_int64(gen) != s->generation))
                session_end_reset(w->mcp, s);
}

int mcp_http_writeable(struct lws *wsi, Web *w, Conn *c) {
        (void) w;
        if (c->out_closing)
                return -1;
        if (c->out_off < c->out_len) {
                size_t n = c->out_len - c->out_off;
                if (n > WRITE_CHUNK)
                        n = WRITE_CHUNK;
                unsigned char buf[LWS_PRE + WRITE_CHUNK];
                memcpy(buf + LWS_PRE, c->out + c->out_off, n);
                if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_HTTP) < 0)
                        return -1;
                c->out_off += n;
                if (c->out_off < c->out_len || c->out_last)
                        lws_callback_on_writable(wsi);
                if (c->out_off == c->out_len && c->out_last)
                        c->out_closing = true; /* closed once libwebsockets has sent it all */
                return 0;
        }
        if (c->out_last)
                return -1; /* the stream is complete: its end is the connection's */
        return 0;
}

void mcp_http_closed(Web *w, Conn *c) {
        McpSession *s = c->mcp; /* NULL once the table is freed */
        if (s && w && w->mcp) {
                /* The client went away before the response: as seatctl does when its
                 * client vanishes, what runs for it is cancelled. */
                stream_unlink(s, c);
                _cleanup_free_ char *line = NULL;
                if (c->id_json[0] &&
                    asprintf(&line,
                             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%s,"
                             "\"reason\":\"the client closed its HTTP stream\"}}\n",
                             c->id_json) > 0 &&
                    child_send(s, line, strlen(line), CHILD_QUEUE_MAX(w) + CANCEL_RESERVE) < 0)
                        /* Not even a cancellation fits: the child has long stopped reading. */
                        session_end(w->mcp, s, "its seatctl mcp stopped reading");
        }
        free(c->mbody);
        c->mbody = NULL;
        free(c->out);
        c->out = NULL;
        c->out_len = c->out_off = 0;
        sodium_memzero(c->bearer, sizeof(c->bearer));
}
