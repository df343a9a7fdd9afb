/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seatctl mcp SEAT: an MCP server on stdio whose tools run in one seat. The reading thread
 * (main) answers the session's own requests at once and gives each tools/call a thread of
 * its own, so that a long exec neither blocks a ping nor its own cancellation. Each call
 * has its own connection to seatd: a cancellation (or the client going away) shuts that
 * connection, and seatd kills the exec's process group in the guest, as it does when
 * seatctl exec is interrupted.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/strprintf.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "config.h"
#include "mcp-tools.h"
#include "seatctl.h"

int mcp_send(McpServer *srv, const char *line, size_t len) {
        int r = 0;
        pthread_mutex_lock(&srv->out_lock);
        if (srv->out_broken)
                r = -EPIPE;
        else if ((r = loop_write(srv->out_fd, line, len)) < 0)
                srv->out_broken = true; /* the client is gone; the reader sees EOF next */
        pthread_mutex_unlock(&srv->out_lock);
        return r;
}

int mcp_send_result(McpServer *srv, json_object *id, json_object *result) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = mcp_format_result(id, result, &line, &len);
        return r < 0 ? r : mcp_send(srv, line, len);
}

int mcp_send_error(McpServer *srv, json_object *id, int code, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *line = NULL;
        size_t len;
        va_list ap;
        va_start(ap, fmt);
        msg = vstrprintf(fmt, ap);
        va_end(ap);
        if (!msg)
                return -ENOMEM;
        int r = mcp_format_error(id, code, msg, &line, &len);
        return r < 0 ? r : mcp_send(srv, line, len);
}

void mcp_call_progress(McpCall *call, double amount, const char *message) {
        _cleanup_json_ json_object *p = NULL;
        _cleanup_free_ char *line = NULL;
        size_t len;
        /* The spec: progress increases with every notification, whatever it counts. */
        if (!call->progress_token || amount <= call->progress)
                return;
        call->progress = amount;
        p = json_object_new_object();
        if (!p)
                return;
        json_object_object_add(p, "progressToken", json_object_get(call->progress_token));
        json_object_object_add(p, "progress", json_object_new_double(amount));
        if (message)
                json_object_object_add(p, "message", json_object_new_string(message));
        if (mcp_format_notification("notifications/progress", p, &line, &len) == 0)
                (void) mcp_send(call->srv, line, len);
}

bool mcp_call_attach(McpCall *call, CtlClient *c) {
        pthread_mutex_lock(&call->srv->lock);
        bool ok = !call->cancelled;
        if (ok)
                call->client = c;
        pthread_mutex_unlock(&call->srv->lock);
        return ok;
}

void mcp_call_detach(McpCall *call) {
        pthread_mutex_lock(&call->srv->lock);
        call->client = NULL;
        pthread_mutex_unlock(&call->srv->lock);
}

bool mcp_call_cancelled(McpCall *call) {
        pthread_mutex_lock(&call->srv->lock);
        bool r = call->cancelled;
        pthread_mutex_unlock(&call->srv->lock);
        return r;
}

/* Under srv->lock. */
static void call_cancel_locked(McpCall *call) {
        call->cancelled = true;
        ctl_client_shutdown(call->client);
}

static McpCall *call_free(McpCall *call) {
        if (!call)
                return NULL;
        json_object_put(call->id);
        json_object_put(call->progress_token);
        json_object_put(call->arguments);
        return mfree(call);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(McpCall *, call_free)

static void *call_thread(void *userdata) {
        McpCall *call = userdata;
        McpServer *srv = call->srv;
        const McpTool *t = mcp_tool_find(call->tool);
        _cleanup_json_ json_object *result = t ? mcp_tool_run(t, call) : NULL;

        pthread_mutex_lock(&srv->lock);
        bool cancelled = call->cancelled;
        for (McpCall **p = &srv->calls; *p; p = &(*p)->next)
                if (*p == call) {
                        *p = call->next;
                        break;
                }
        pthread_mutex_unlock(&srv->lock);
        /* A cancelled request gets no response (the spec: the client has stopped waiting). */
        if (!cancelled) {
                if (result)
                        (void) mcp_send_result(srv, call->id, result);
                else
                        (void) mcp_send_error(srv, call->id, MCP_INTERNAL_ERROR, "Internal error: the tool call failed (out of memory?)");
        }
        call_free(call);
        pthread_mutex_lock(&srv->lock);
        srv->n_calls--;
        pthread_cond_signal(&srv->idle);
        pthread_mutex_unlock(&srv->lock);
        return NULL;
}

static void start_call(McpServer *srv, McpMessage *m) {
        const char *name = NULL;
        json_object *args = NULL, *meta = NULL, *token = NULL;
        char msg[512];

        if (json_get_string(m->params, "name", true, 128, &name) < 0) {
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid params: tools/call needs 'name', a string");
                return;
        }
        const McpTool *t = mcp_tool_find(name);
        if (!t) {
                _cleanup_free_ char *safe = log_escape(name, strlen(name), 64);
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Unknown tool '%s' (tools/list names them)", safe ? safe : "?");
                return;
        }
        if (json_get_object(m->params, "arguments", false, &args) < 0) {
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid params: 'arguments' must be an object");
                return;
        }
        if (json_get_object(m->params, "_meta", false, &meta) < 0) {
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid params: '_meta' must be an object");
                return;
        }
        if (meta && json_object_object_get_ex(meta, "progressToken", &token) &&
            !(json_object_is_type(token, json_type_int) ||
              (json_object_is_type(token, json_type_string) && json_object_get_string_len(token) <= 256))) {
                /* Capped: it is echoed in every progress notification of the call. */
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid params: 'progressToken' must be an integer or a string of at most 256 bytes");
                return;
        }
        _cleanup_json_ json_object *empty = args ? NULL : json_object_new_object();
        if (!args)
                args = empty;
        if (mcp_tool_check(t, args, msg, sizeof(msg)) < 0) {
                mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid arguments for tool '%s': %s", mcp_tool_name(t), msg);
                return;
        }

        _cleanup_(call_freep) McpCall *call = calloc(1, sizeof(*call));
        if (!call || mcp_id_key(m->id, call->id_key, sizeof(call->id_key)) < 0) {
                mcp_send_error(srv, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
                return;
        }
        call->srv = srv;
        call->tool = mcp_tool_name(t);
        /* Deep copies: json-c's reference counts are not atomic, and the message they came
         * from is freed on this thread while the call's thread reads them. */
        if (json_object_deep_copy(m->id, &call->id, NULL) < 0 ||
            (token && json_object_deep_copy(token, &call->progress_token, NULL) < 0) ||
            json_object_deep_copy(args, &call->arguments, NULL) < 0) {
                mcp_send_error(srv, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
                return;
        }

        pthread_mutex_lock(&srv->lock);
        bool busy = srv->n_calls >= MCP_CALLS_MAX, dup = false;
        for (McpCall *c = srv->calls; c && !dup; c = c->next)
                dup = !strcmp(c->id_key, call->id_key);
        pthread_attr_t attr;
        pthread_t th;
        int r = -1;
        if (!busy && !dup) {
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                call->next = srv->calls;
                srv->calls = call;
                srv->n_calls++;
                r = pthread_create(&th, &attr, call_thread, call);
                pthread_attr_destroy(&attr);
                if (r != 0) {
                        srv->calls = call->next;
                        srv->n_calls--;
                }
        }
        pthread_mutex_unlock(&srv->lock);
        if (r == 0) {
                TAKE_PTR(call); /* its thread's now */
                return;
        }
        if (busy)
                mcp_send_error(srv, m->id, MCP_SERVER_BUSY, "Server busy: %d tool calls are running; wait for one to end", MCP_CALLS_MAX);
        else if (dup)
                mcp_send_error(srv, m->id, MCP_INVALID_REQUEST, "Invalid Request: a call with this id is still running");
        else
                mcp_send_error(srv, m->id, MCP_INTERNAL_ERROR, "Internal error: cannot start a thread: %s", strerror(r));
}

static void cancel_request(McpServer *srv, json_object *params) {
        json_object *rid = NULL;
        char key[96];
        /* A notification: nothing is answered, whatever it holds. */
        if (!params || !json_object_object_get_ex(params, "requestId", &rid) || mcp_id_key(rid, key, sizeof(key)) < 0)
                return;
        pthread_mutex_lock(&srv->lock);
        for (McpCall *c = srv->calls; c; c = c->next)
                if (!strcmp(c->id_key, key))
                        call_cancel_locked(c);
        pthread_mutex_unlock(&srv->lock);
}

static json_object *initialize_result(McpServer *srv, json_object *params) {
        const char *want = NULL, *name = NULL, *version = NULL;
        json_object *info = NULL;

        (void) json_get_string(params, "protocolVersion", false, 32, &want);
        /* The spec: the client's version when we support it, else our latest (the client
         * then decides whether it can go on). */
        snprintf(srv->protocol, sizeof(srv->protocol), "%s", MCP_PROTOCOL_LATEST);
        for (const char *const *v = mcp_protocol_versions; want && *v; v++)
                if (!strcmp(*v, want))
                        snprintf(srv->protocol, sizeof(srv->protocol), "%s", *v);
        if (json_get_object(params, "clientInfo", false, &info) == 0 && info) {
                (void) json_get_string(info, "name", false, 64, &name);
                (void) json_get_string(info, "version", false, 32, &version);
        }
        _cleanup_free_ char *n = log_escape(name ? name : "unnamed", strlen(name ? name : "unnamed"), 64);
        _cleanup_free_ char *v = log_escape(version ? version : "?", strlen(version ? version : "?"), 32);
        snprintf(srv->client_info, sizeof(srv->client_info), "%s/%s", n ? n : "?", v ? v : "?");

        json_object *r = json_object_new_object(), *caps = json_object_new_object(), *tools = json_object_new_object(),
                    *server = json_object_new_object();
        json_object_object_add(tools, "listChanged", json_object_new_boolean(false));
        json_object_object_add(caps, "tools", tools);
        json_object_object_add(server, "name", json_object_new_string("seatd"));
        json_object_object_add(server, "title", json_object_new_string("seatd seat (an isolated VM)"));
        json_object_object_add(server, "version", json_object_new_string(SEATD_VERSION));
        json_object_object_add(r, "protocolVersion", json_object_new_string(srv->protocol));
        json_object_object_add(r, "capabilities", caps);
        json_object_object_add(r, "serverInfo", server);
        json_object_object_add(
                r, "instructions",
                json_object_new_string("The tools run inside a seat: a disposable virtual machine of its own, on a network "
                                       "whose egress is filtered (default deny), wiped at every reset. Every tool call is "
                                       "recorded in the seat's audit log with its arguments, sealed as evidence."));
        return r;
}

static void handle_request(McpServer *srv, McpMessage *m) {
        if (!strcmp(m->method, "initialize")) {
                if (srv->initialized) {
                        mcp_send_error(srv, m->id, MCP_INVALID_REQUEST, "Invalid Request: the session is initialized already");
                        return;
                }
                _cleanup_json_ json_object *params = m->params ? json_object_get(m->params) : json_object_new_object();
                _cleanup_json_ json_object *r = initialize_result(srv, params);
                srv->initialized = true;
                mcp_send_result(srv, m->id, r);
                return;
        }
        if (!strcmp(m->method, "ping")) {
                _cleanup_json_ json_object *r = json_object_new_object();
                mcp_send_result(srv, m->id, r);
                return;
        }
        if (!srv->initialized) {
                mcp_send_error(srv, m->id, MCP_INVALID_REQUEST, "Invalid Request: send 'initialize' first (only 'ping' may come before it)");
                return;
        }
        if (!strcmp(m->method, "tools/list")) {
                _cleanup_json_ json_object *r = mcp_tools_list();
                if (r)
                        mcp_send_result(srv, m->id, r);
                else
                        mcp_send_error(srv, m->id, MCP_INTERNAL_ERROR, "Internal error: out of memory");
                return;
        }
        if (!strcmp(m->method, "tools/call")) {
                if (!m->params) {
                        mcp_send_error(srv, m->id, MCP_INVALID_PARAMS, "Invalid params: tools/call needs 'params' with 'name'");
                        return;
                }
                start_call(srv, m);
                return;
        }
        _cleanup_free_ char *safe = log_escape(m->method, strlen(m->method), 64);
        mcp_send_error(srv, m->id, MCP_METHOD_NOT_FOUND, "Method not found: '%s' (this server offers tools only)", safe ? safe : "?");
}

static void handle_line(McpServer *srv, const char *line, size_t len) {
        McpMessage m;
        McpRpcError err;
        int r = mcp_message_parse(line, len, &m, &err);
        if (r == -EBADMSG) {
                mcp_send_error(srv, err.id, err.code, "%s", err.message);
                mcp_message_done(&m);
                return;
        }
        if (r < 0)
                return;
        if (m.kind == MCP_REQUEST)
                handle_request(srv, &m);
        else if (m.kind == MCP_NOTIFICATION && !strcmp(m.method, "notifications/cancelled"))
                cancel_request(srv, m.params);
        /* notifications/initialized and other notifications, and responses: nothing to do. */
        mcp_message_done(&m);
}

static void mcp_usage(FILE *f) {
        fprintf(f,
                "usage: seatctl [--token-file FILE] mcp [--user UID[:GID]] [--transfer-dir DIR] [--no-forward-port] SEAT\n"
                "\n"
                "Serves the Model Context Protocol (revision " MCP_PROTOCOL_LATEST ") on stdin/stdout for an\n"
                "agent harness: its tools (exec, read_file, write_file, list_directory, seat_status,\n"
                "forward_port) run in SEAT, each call recorded in the seat's audit log. The token\n"
                "comes from --token-file or $SEATD_TOKEN, as for every seatctl command. Logs go to\n"
                "stderr.\n"
                "\n"
                "  --user UID[:GID]  the guest user the tools run as (default 0, the guest's root;\n"
                "                    a UID alone brings the GID of the same number)\n"
                "  --transfer-dir DIR  offer the tools upload and download, between DIR (and only\n"
                "                    what lies beneath it) and the seat; off without it\n"
                "  --no-forward-port  do not offer forward_port (its ports open on this host, which\n"
                "                    is not the agent's when it is remote: seat-web passes this)\n"
                "\n"
                "See docs/mcp.md for the JSON block an MCP client's configuration takes.\n");
}

int verb_mcp(int argc, char *argv[], SeatError **ret_error) {
        static const struct option options[] = {
                { "user", required_argument, NULL, 'u' },
                { "transfer-dir", required_argument, NULL, 'T' },
                { "no-forward-port", no_argument, NULL, 'F' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        McpServer srv = { .out_fd = STDOUT_FILENO, .token_file = ctl_opts.token_file };
        int c;
        while ((c = getopt_long(argc, argv, "+hu:", options, NULL)) >= 0)
                switch (c) {
                case 'u':
                        if (ctl_parse_user(optarg, &srv.uid, &srv.gid) < 0)
                                return seat_error_set(ret_error, EINVAL, "mcp: --user takes UID or UID:GID (numbers up to 4294967294), not '%s'", optarg), 2;
                        srv.have_uid = true;
                        break;
                case 'T':
                        if (mcp_transfer_enable(optarg) < 0)
                                return seat_error_set(ret_error, errno, "mcp: --transfer-dir '%s': %s", optarg, strerror(errno)), 2;
                        break;
                case 'F':
                        mcp_forward_disable();
                        break;
                case 'h':
                        mcp_usage(stdout);
                        return 0;
                default:
                        mcp_usage(stderr);
                        return 2;
                }
        if (optind != argc - 1) {
                mcp_usage(stderr);
                return 2;
        }
        srv.seat = argv[optind];
        if (isatty(STDIN_FILENO))
                fprintf(stderr, "seatctl mcp: serving seat %s on stdin/stdout (JSON-RPC, one message a line); "
                                "an MCP client starts this command itself (docs/mcp.md)\n", srv.seat);

        pthread_mutex_init(&srv.lock, NULL);
        pthread_mutex_init(&srv.out_lock, NULL);
        pthread_cond_init(&srv.idle, NULL);
        _cleanup_(frame_reader_freep) FrameReader *reader = frame_reader_new(MCP_MESSAGE_MAX);
        if (!reader)
                return seat_error_set(ret_error, ENOMEM, "out of memory"), 1;
        int status = 0;
        for (;;) {
                const char *frame;
                size_t len;
                int r = frame_reader_next(reader, &frame, &len);
                if (r == -E2BIG) {
                        /* The id is lost with the line: answered with null, as the spec says. */
                        mcp_send_error(&srv, NULL, MCP_INVALID_REQUEST, "Invalid Request: a message is over %u bytes", MCP_MESSAGE_MAX);
                        continue;
                }
                if (r > 0) {
                        handle_line(&srv, frame, len);
                        continue;
                }
                ssize_t n = frame_reader_fill(reader, STDIN_FILENO);
                if (n == -EINTR || n == -EAGAIN)
                        continue;
                if (n < 0) {
                        seat_error_set(ret_error, (int) -n, "read stdin: %s", strerror((int) -n));
                        status = 1;
                        break;
                }
                if (n == 0)
                        break;
        }
        /* The client went away: nothing waits for the calls still running, so they are
         * cancelled (seatd kills their processes) and awaited, that none is left behind. */
        pthread_mutex_lock(&srv.lock);
        for (McpCall *call = srv.calls; call; call = call->next)
                call_cancel_locked(call);
        while (srv.n_calls > 0)
                pthread_cond_wait(&srv.idle, &srv.lock);
        pthread_mutex_unlock(&srv.lock);
        mcp_forwards_stop(); /* the session's forwards end with it */
        pthread_mutex_destroy(&srv.lock);
        pthread_mutex_destroy(&srv.out_lock);
        pthread_cond_destroy(&srv.idle);
        return status;
}
