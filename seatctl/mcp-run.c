/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What each MCP tool asks seatd. Every tool but seat_status (a seat.status, recorded as a
 * "tool.call") is a seat.exec, run as the
 * session's guest user (--user), so the guest's own permissions apply to the agent's file
 * operations as to its commands (seat.file_put would write as the guest's root), and each
 * call lands in the audit log as an exec with the MCP call beside it ("tool").
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "common/base64.h"
#include "common/fileio.h"
#include "common/strprintf.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "mcp-tools.h"
#include "seatctl.h"

#define PROGRESS_TEXT_MAX 4096 /* of output, in one progress notification */
#define REASON_MAX 1024        /* of a tool's stderr, as the reason a call failed */

/* Bytes kept up to a cap; the total is counted past it. */
typedef struct Capture {
        uint8_t *data;
        size_t len, keep;
        uint64_t total;
} Capture;

typedef struct ExecRun {
        McpCall *call;
        Capture out, err;
        bool progress; /* stream output as progress notifications */
        uint64_t streamed;
        int sink_fd;   /* > 0: stdout goes to this file instead, at most sink_max bytes */
        uint64_t sink_max;
        int sink_error;
} ExecRun;

typedef struct ExecResult {
        int64_t code, signal, duration_ms, stdout_bytes, stderr_bytes;
        bool timed_out;
        const char *error; /* in the result object */
} ExecResult;

static void capture_done(Capture *c) {
        free(c->data);
        c->data = NULL;
}

static int capture_add(Capture *c, const uint8_t *data, size_t len) {
        c->total += len;
        size_t room = c->keep - c->len, n = MIN(room, len);
        if (n == 0)
                return 0;
        if (!c->data && !(c->data = malloc(c->keep)))
                return -ENOMEM;
        memcpy(c->data + c->len, data, n);
        c->len += n;
        return 0;
}

/* ---- results ---- */

static json_object *text_block(const char *text) {
        json_object *content = json_object_new_array(), *b = json_object_new_object();
        json_object_object_add(b, "type", json_object_new_string("text"));
        json_object_object_add(b, "text", json_object_new_string(text));
        json_object_array_add(content, b);
        return content;
}

/* A result with structured content, and its JSON as text for clients that read only that
 * (the spec's advice for backward compatibility). structured is consumed. */
json_object *mcp_tool_ok(json_object *structured) {
        json_object *r = json_object_new_object();
        if (!r || !structured) {
                json_object_put(r);
                json_object_put(structured);
                return NULL;
        }
        json_object_object_add(r, "content", text_block(json_object_to_json_string_ext(structured, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
        json_object_object_add(r, "structuredContent", structured);
        json_object_object_add(r, "isError", json_object_new_boolean(false));
        return r;
}

/* A tool execution error: the model reads the reason and may try otherwise. */
json_object *mcp_tool_fail(const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        msg = vstrprintf(fmt, ap);
        va_end(ap);
        json_object *r = json_object_new_object();
        if (!msg || !r) {
                json_object_put(r);
                return NULL;
        }
        json_object_object_add(r, "content", text_block(msg));
        json_object_object_add(r, "isError", json_object_new_boolean(true));
        return r;
}

/* ---- seat.exec ---- */

static int exec_event(const char *type, json_object *body, void *userdata) {
        ExecRun *run = userdata;
        const char *stream = NULL;
        _cleanup_free_ void *bytes = NULL;
        size_t n = 0;
        if (strcmp(type, "output"))
                return 0;
        if (ctl_output_event(body, &stream, &bytes, &n) < 0)
                return -EPROTO;
        bool is_err = !strcmp(stream, "stderr");
        if (!is_err && run->sink_fd > 0) {
                /* Counted in full; written up to the cap (the caller refuses what is over). */
                uint64_t room = run->out.total < run->sink_max ? run->sink_max - run->out.total : 0;
                run->out.total += n;
                if (room > 0 && !run->sink_error) {
                        int w = loop_write(run->sink_fd, bytes, MIN((uint64_t) n, room));
                        if (w < 0)
                                run->sink_error = -w;
                }
                return 0;
        }
        int r = capture_add(is_err ? &run->err : &run->out, bytes, n);
        if (r < 0)
                return r;
        if (run->progress && n > 0) {
                run->streamed += n;
                _cleanup_free_ char *text = utf8_from_bytes(bytes, n, PROGRESS_TEXT_MAX, NULL);
                _cleanup_free_ char *msg = NULL;
                if (text && asprintf(&msg, "%s: %s", is_err ? "stderr" : "stdout", text) >= 0)
                        mcp_call_progress(run->call, (double) run->streamed, msg);
        }
        return 0;
}

/* The MCP call as seatd records it beside its own record ("tool"): the tool, the client
 * from initialize, the request id and the arguments as sent. */
json_object *mcp_tool_record(const McpCall *call) {
        json_object *tool = json_object_new_object();
        if (!tool)
                return NULL;
        json_object_object_add(tool, "name", json_object_new_string(call->tool));
        json_object_object_add(tool, "client", json_object_new_string(call->srv->client_info));
        json_object_object_add(tool, "request", json_object_new_string(call->id_key));
        json_object_object_add(tool, "arguments", json_object_new_string(json_object_to_json_string_ext(call->arguments, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
        return tool;
}

/*
 * Runs argv in the seat with the session's token, guest user and the call's record. 0 with
 * *ret filled; -ECANCELED after a cancellation; else -errno with ret_error set.
 */
static int seat_exec(ExecRun *run, json_object *argv, json_object *extra, ExecResult *ret, json_object **ret_obj,
                     SeatError **ret_error) {
        McpCall *call = run->call;
        McpServer *srv = call->srv;
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        _cleanup_free_ char *token = NULL;
        _cleanup_json_ json_object *p = extra ? json_object_get(extra) : json_object_new_object();
        json_object *tool = mcp_tool_record(call);
        if (!p || !tool) {
                json_object_put(tool);
                return -ENOMEM;
        }
        int r = ctl_load_token(srv->token_file, &token, ret_error);
        if (r < 0) {
                json_object_put(tool);
                return r;
        }
        json_object_object_add(p, "seat", json_object_new_string(srv->seat));
        json_object_object_add(p, "argv", json_object_get(argv));
        if (token)
                json_object_object_add(p, "token", json_object_new_string(token));
        if (srv->have_uid) {
                json_object_object_add(p, "uid", json_object_new_int64(srv->uid));
                json_object_object_add(p, "gid", json_object_new_int64(srv->gid));
        }
        json_object_object_add(p, "tool", tool);

        r = ctl_connect_as(ctl_opts.socket, token != NULL, &c, ret_error);
        if (r < 0)
                return r;
        if (!mcp_call_attach(call, c))
                return -ECANCELED;
        _cleanup_json_ json_object *res = NULL;
        r = ctl_call(c, "seat.exec", p, exec_event, run, &res, NULL, ret_error);
        mcp_call_detach(call);
        if (mcp_call_cancelled(call))
                return -ECANCELED;
        if (r < 0)
                return r;
        *ret = (ExecResult) {};
        if (json_get_int64(res, "code", true, -1, 255, &ret->code) < 0)
                return seat_error_set(ret_error, EPROTO, "seatd sent no exit code");
        (void) json_get_int64(res, "signal", false, 0, 64, &ret->signal);
        (void) json_get_int64(res, "duration_ms", false, 0, INT64_MAX, &ret->duration_ms);
        (void) json_get_int64(res, "stdout_bytes", false, 0, INT64_MAX, &ret->stdout_bytes);
        (void) json_get_int64(res, "stderr_bytes", false, 0, INT64_MAX, &ret->stderr_bytes);
        (void) json_get_bool(res, "timed_out", false, &ret->timed_out);
        (void) json_get_string(res, "error", false, 4096, &ret->error);
        *ret_obj = TAKE_PTR(res); /* owns error */
        return 0;
}

/* Why a call could not be made: seatd's words (a refused token says so). */
static json_object *seatd_failed(int r, SeatError *err) {
        if (r == -ECANCELED)
                return NULL;
        return mcp_tool_fail("seatd could not run it: %s", err ? err->message : strerror(-r));
}

/* The tool's stderr as the reason it failed, or its exit status. */
static json_object *guest_failed(const char *what, const ExecRun *run, const ExecResult *res) {
        _cleanup_free_ char *reason = run->err.len ? utf8_from_bytes(run->err.data, run->err.len, REASON_MAX, NULL) : NULL;
        size_t n = reason ? strlen(reason) : 0;
        while (n > 0 && strchr("\n\r ", reason[n - 1]))
                reason[--n] = '\0';
        if (res->error)
                return mcp_tool_fail("%s: %s", what, res->error);
        if (res->timed_out)
                return mcp_tool_fail("%s: timed out", what);
        if (n)
                return mcp_tool_fail("%s: %s", what, reason);
        return mcp_tool_fail("%s: exit status %" PRId64 "%s", what, res->code, res->signal ? " (killed by a signal)" : "");
}

/* A command line for seat_exec(): ARGV_NEW("cat", "--", path). */
static json_object *argv_new(const char *const *words, size_t n) {
        json_object *a = json_object_new_array();
        for (size_t i = 0; a && i < n; i++)
                json_object_array_add(a, json_object_new_string(words[i]));
        return a;
}
#define ARGV_NEW(...) argv_new((const char *const[]) { __VA_ARGS__ }, ELEMENTSOF(((const char *const[]) { __VA_ARGS__ })))

/* The command ran to its end and said it succeeded. */
static bool guest_succeeded(const ExecResult *res) {
        return res->code == 0 && !res->signal && !res->timed_out && !res->error;
}

const char *mcp_arg_str(json_object *args, const char *key) {
        json_object *v = NULL;
        return json_object_object_get_ex(args, key, &v) ? json_object_get_string(v) : NULL;
}

/* ---- exec ---- */

int mcp_check_exec(json_object *arguments, char *msg, size_t size) {
        bool argv = json_object_object_get_ex(arguments, "argv", NULL), cmd = json_object_object_get_ex(arguments, "command", NULL);
        if (argv == cmd) {
                snprintf(msg, size, "give either 'argv' (an array of strings) or 'command' (a shell command line), not %s",
                         argv ? "both" : "neither");
                return -EINVAL;
        }
        return 0;
}

static json_object *capture_text(const Capture *c, size_t *ret_len) {
        _cleanup_free_ char *t = utf8_from_bytes(c->data ? c->data : (const uint8_t *) "", c->len, c->len, ret_len);
        return t ? json_object_new_string(t) : NULL;
}

json_object *mcp_run_exec(McpCall *call) {
        json_object *args = call->arguments, *v = NULL;
        _cleanup_json_ json_object *argv = NULL, *extra = json_object_new_object(), *res_obj = NULL;
        _cleanup_error_ SeatError *err = NULL;
        ExecRun run = { .call = call, .out.keep = MCP_OUTPUT_KEEP, .err.keep = MCP_OUTPUT_KEEP, .progress = call->progress_token != NULL };
        ExecResult res;
        const char *s;

        if (!extra)
                return NULL;
        if (json_object_object_get_ex(args, "argv", &v))
                argv = json_object_get(v);
        else
                argv = ARGV_NEW("/bin/sh", "-c", mcp_arg_str(args, "command"));
        if ((s = mcp_arg_str(args, "cwd")))
                json_object_object_add(extra, "cwd", json_object_new_string(s));
        if (json_object_object_get_ex(args, "env", &v)) {
                json_object *env = json_object_new_array();
                json_object_object_foreach(v, key, val) {
                        _cleanup_free_ char *kv = NULL;
                        if (asprintf(&kv, "%s=%s", key, json_object_get_string(val)) >= 0)
                                json_object_array_add(env, json_object_new_string(kv));
                }
                json_object_object_add(extra, "env", env);
        }
        if ((s = mcp_arg_str(args, "stdin"))) {
                _cleanup_free_ char *b64 = NULL;
                if (base64_encode(s, strlen(s), &b64, NULL) < 0)
                        return NULL;
                json_object_object_add(extra, "stdin", json_object_new_string(b64));
        }
        if (json_object_object_get_ex(args, "timeout_ms", &v))
                json_object_object_add(extra, "timeout_ms", json_object_new_int64(json_object_get_int64(v)));

        int r = seat_exec(&run, argv, extra, &res, &res_obj, &err);
        if (r < 0) {
                capture_done(&run.out);
                capture_done(&run.err);
                return seatd_failed(r, err);
        }
        json_object *o = json_object_new_object();
        json_object_object_add(o, "exit_code", json_object_new_int64(res.code));
        json_object_object_add(o, "signal", json_object_new_int64(res.signal));
        json_object_object_add(o, "timed_out", json_object_new_boolean(res.timed_out));
        json_object_object_add(o, "duration_ms", json_object_new_int64(res.duration_ms));
        json_object_object_add(o, "stdout", capture_text(&run.out, NULL));
        json_object_object_add(o, "stdout_truncated", json_object_new_boolean(run.out.total > run.out.len || res.stdout_bytes > (int64_t) run.out.len));
        json_object_object_add(o, "stdout_bytes", json_object_new_int64(res.stdout_bytes));
        json_object_object_add(o, "stderr", capture_text(&run.err, NULL));
        json_object_object_add(o, "stderr_truncated", json_object_new_boolean(run.err.total > run.err.len || res.stderr_bytes > (int64_t) run.err.len));
        json_object_object_add(o, "stderr_bytes", json_object_new_int64(res.stderr_bytes));
        if (res.error)
                json_object_object_add(o, "error", json_object_new_string(res.error));
        capture_done(&run.out);
        capture_done(&run.err);
        return mcp_tool_ok(o);
}

/* ---- read_file ---- */

json_object *mcp_run_read_file(McpCall *call) {
        json_object *args = call->arguments, *v = NULL;
        const char *path = mcp_arg_str(args, "path"), *enc = mcp_arg_str(args, "encoding") ?: "text";
        int64_t max = json_object_object_get_ex(args, "max_bytes", &v) ? json_object_get_int64(v) : MCP_READ_MAX;
        _cleanup_json_ json_object *argv = ARGV_NEW("cat", "--", path), *extra = json_object_new_object(), *res_obj = NULL;
        _cleanup_error_ SeatError *err = NULL;
        /* One byte more than asked tells whether the file holds more. */
        ExecRun run = { .call = call, .out.keep = (size_t) max + 1, .err.keep = REASON_MAX };
        ExecResult res;

        if (!argv || !extra)
                return NULL;
        /* The guest sends what it likes: the agent stops sending past max_output. */
        json_object_object_add(extra, "max_output", json_object_new_int64(max + 1 + REASON_MAX));
        int r = seat_exec(&run, argv, extra, &res, &res_obj, &err);
        if (r < 0) {
                capture_done(&run.out);
                capture_done(&run.err);
                return seatd_failed(r, err);
        }
        json_object *result;
        bool truncated = run.out.len > (size_t) max;
        size_t n = MIN(run.out.len, (size_t) max);
        if (!guest_succeeded(&res)) {
                result = guest_failed("cannot read it", &run, &res);
        } else if (!strcmp(enc, "base64")) {
                _cleanup_free_ char *b64 = NULL;
                result = NULL;
                if (base64_encode(run.out.data ? run.out.data : (uint8_t *) "", n, &b64, NULL) == 0) {
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "path", json_object_new_string(path));
                        json_object_object_add(o, "encoding", json_object_new_string("base64"));
                        json_object_object_add(o, "content", json_object_new_string(b64));
                        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) n));
                        json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
                        result = mcp_tool_ok(o);
                }
        } else {
                /* Cut at a character boundary: the byte after the cut is at hand. */
                if (truncated)
                        while (n > 0 && (run.out.data[n] & 0xC0) == 0x80)
                                n--;
                if (!utf8_is_valid(run.out.data ? run.out.data : (uint8_t *) "", n))
                        result = mcp_tool_fail("cannot read it as text: the file is not UTF-8 (or holds NUL bytes); ask for encoding \"base64\"");
                else {
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "path", json_object_new_string(path));
                        json_object_object_add(o, "encoding", json_object_new_string("text"));
                        json_object_object_add(o, "content", json_object_new_string_len(n ? (const char *) run.out.data : "", (int) n));
                        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) n));
                        json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
                        result = mcp_tool_ok(o);
                }
        }
        capture_done(&run.out);
        capture_done(&run.err);
        return result;
}

/* ---- write_file ---- */

int mcp_check_write_file(json_object *arguments, char *msg, size_t size) {
        const char *enc = mcp_arg_str(arguments, "encoding"), *content = mcp_arg_str(arguments, "content");
        size_t len = strlen(content);
        if (enc && !strcmp(enc, "base64")) {
                _cleanup_free_ void *bytes = NULL;
                size_t n = 0;
                if (base64_decode(content, len, MCP_WRITE_MAX, &bytes, &n) < 0) {
                        snprintf(msg, size, "'content' is not base64 of at most 512 KiB");
                        return -EINVAL;
                }
        } else if (len > MCP_WRITE_MAX) {
                snprintf(msg, size, "'content' is over 512 KiB");
                return -EINVAL;
        }
        return 0;
}

int mcp_seat_write(McpCall *call, const char *path, bool create, const void *data, size_t len, json_object **ret_result) {
        /* The shell opens the file as the tools' user: the guest's permissions decide. The
         * path is an argument, never part of the script. */
        _cleanup_json_ json_object *argv = ARGV_NEW("/bin/sh", "-c", create ? "cat > \"$1\"" : "cat >> \"$1\"", call->tool, path),
                                   *extra = json_object_new_object(), *res_obj = NULL;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *b64 = NULL;
        ExecRun run = { .call = call, .out.keep = 0, .err.keep = REASON_MAX };
        ExecResult res;

        *ret_result = NULL;
        if (!argv || !extra || base64_encode(data, len, &b64, NULL) < 0)
                return -ENOMEM;
        json_object_object_add(extra, "stdin", json_object_new_string(b64));
        json_object_object_add(extra, "max_output", json_object_new_int64(REASON_MAX));
        int r = seat_exec(&run, argv, extra, &res, &res_obj, &err);
        if (r < 0)
                *ret_result = seatd_failed(r, err);
        else if (!guest_succeeded(&res))
                *ret_result = guest_failed("cannot write it", &run, &res);
        capture_done(&run.err);
        return r == -ECANCELED ? r : 0;
}

int mcp_seat_read_to_fd(McpCall *call, const char *path, int fd, uint64_t max, uint64_t *ret_bytes, json_object **ret_result) {
        _cleanup_json_ json_object *argv = ARGV_NEW("cat", "--", path), *extra = json_object_new_object(), *res_obj = NULL;
        _cleanup_error_ SeatError *err = NULL;
        ExecRun run = { .call = call, .err.keep = REASON_MAX, .sink_fd = fd, .sink_max = max };
        ExecResult res;

        *ret_result = NULL;
        if (!argv || !extra)
                return -ENOMEM;
        json_object_object_add(extra, "max_output", json_object_new_int64((int64_t) max + 1 + REASON_MAX));
        int r = seat_exec(&run, argv, extra, &res, &res_obj, &err);
        if (r < 0)
                *ret_result = seatd_failed(r, err);
        else if (!guest_succeeded(&res))
                *ret_result = guest_failed("cannot read it", &run, &res);
        else if (run.out.total > max)
                *ret_result = mcp_tool_fail("the file is over %" PRIu64 " MiB", max >> 20);
        else if (run.sink_error)
                *ret_result = mcp_tool_fail("cannot write host_path: %s", strerror(run.sink_error));
        *ret_bytes = run.out.total;
        capture_done(&run.err);
        return r == -ECANCELED ? r : 0;
}

json_object *mcp_run_write_file(McpCall *call) {
        json_object *args = call->arguments, *result = NULL;
        const char *path = mcp_arg_str(args, "path"), *enc = mcp_arg_str(args, "encoding") ?: "text", *mode = mcp_arg_str(args, "mode");
        const char *content = mcp_arg_str(args, "content");
        _cleanup_free_ void *bytes = NULL;
        size_t n = 0;

        if (!strcmp(enc, "base64")) {
                if (base64_decode(content, strlen(content), MCP_WRITE_MAX, &bytes, &n) < 0)
                        return mcp_tool_fail("'content' is not base64 of at most 512 KiB");
        } else {
                n = strlen(content);
                if (!(bytes = malloc(n + 1)))
                        return NULL;
                memcpy(bytes, content, n);
        }
        int r = mcp_seat_write(call, path, true, bytes, n, &result);
        if (r < 0 || result)
                return result;
        if (mode) {
                /* A second exec: chmod as the same user, after the content is there. */
                _cleanup_json_ json_object *argv = ARGV_NEW("chmod", mode, path), *res_obj = NULL;
                _cleanup_error_ SeatError *err = NULL;
                ExecRun run = { .call = call, .err.keep = REASON_MAX };
                ExecResult res;
                if (!argv)
                        return NULL;
                r = seat_exec(&run, argv, NULL, &res, &res_obj, &err);
                if (r < 0)
                        result = seatd_failed(r, err);
                else if (!guest_succeeded(&res))
                        result = guest_failed("wrote it, but cannot set its mode", &run, &res);
                capture_done(&run.err);
                if (r < 0 || result)
                        return result;
        }
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) n));
        return mcp_tool_ok(o);
}

/* ---- list_directory ---- */

/* One "TYPE/NAME\0" a entry: names may hold any byte but '/' and NUL, so neither a newline
 * nor a space in a name can shift the parse. printf's \000 is POSIX (dash, busybox). */
static const char list_script[] =
        "cd -- \"$1\" || exit 1\n"
        "for f in * .*; do\n"
        "  case $f in .|..) continue;; esac\n"
        "  if [ -L \"$f\" ]; then t=symlink; elif [ -d \"$f\" ]; then t=directory;\n"
        "  elif [ -f \"$f\" ]; then t=file; elif [ -e \"$f\" ]; then t=other; else continue; fi\n"
        "  printf '%s/%s\\000' \"$t\" \"$f\"\n"
        "done\n";

json_object *mcp_run_list_directory(McpCall *call) {
        const char *path = mcp_arg_str(call->arguments, "path");
        _cleanup_json_ json_object *argv = ARGV_NEW("/bin/sh", "-c", list_script, "list_directory", path),
                                   *extra = json_object_new_object(), *res_obj = NULL;
        _cleanup_error_ SeatError *err = NULL;
        ExecRun run = { .call = call, .out.keep = 4u * 1024u * 1024u, .err.keep = REASON_MAX };
        ExecResult res;

        if (!argv || !extra)
                return NULL;
        json_object_object_add(extra, "max_output", json_object_new_int64((int64_t) run.out.keep + REASON_MAX));
        int r = seat_exec(&run, argv, extra, &res, &res_obj, &err);
        if (r < 0) {
                capture_done(&run.out);
                capture_done(&run.err);
                return seatd_failed(r, err);
        }
        if (!guest_succeeded(&res)) {
                json_object *f = guest_failed("cannot list it", &run, &res);
                capture_done(&run.out);
                capture_done(&run.err);
                return f;
        }
        json_object *o = json_object_new_object(), *entries = json_object_new_array();
        bool truncated = run.out.total > run.out.len;
        size_t count = 0;
        for (size_t i = 0; i < run.out.len;) {
                const uint8_t *rec = run.out.data + i, *end = memchr(rec, '\0', run.out.len - i);
                if (!end) {
                        truncated = true; /* a record cut by the cap */
                        break;
                }
                i = (size_t) (end - run.out.data) + 1;
                const uint8_t *slash = memchr(rec, '/', (size_t) (end - rec));
                if (!slash || slash + 1 == end)
                        continue; /* not ours: the guest's shell is the guest's */
                if (count == MCP_LIST_MAX) {
                        truncated = true;
                        break;
                }
                static const char *const types[] = { "file", "directory", "symlink", "other" };
                const char *type = "other";
                for (size_t t = 0; t < ELEMENTSOF(types); t++)
                        if ((size_t) (slash - rec) == strlen(types[t]) && !memcmp(rec, types[t], strlen(types[t])))
                                type = types[t];
                _cleanup_free_ char *name = utf8_from_bytes(slash + 1, (size_t) (end - slash - 1), 4096, NULL);
                json_object *e = json_object_new_object();
                json_object_object_add(e, "name", json_object_new_string(name ? name : ""));
                json_object_object_add(e, "type", json_object_new_string(type));
                json_object_array_add(entries, e);
                count++;
        }
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "entries", entries);
        json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
        capture_done(&run.out);
        capture_done(&run.err);
        return mcp_tool_ok(o);
}

/* ---- seat_status ---- */

json_object *mcp_run_seat_status(McpCall *call) {
        McpServer *srv = call->srv;
        _cleanup_(ctl_client_freep) CtlClient *c = NULL;
        _cleanup_free_ char *token = NULL;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_json_ json_object *p = json_object_new_object();
        json_object *res = NULL;
        if (!p)
                return NULL;
        int r = ctl_load_token(srv->token_file, &token, &err);
        if (r >= 0) {
                json_object_object_add(p, "seat", json_object_new_string(srv->seat));
                if (token)
                        json_object_object_add(p, "token", json_object_new_string(token));
                json_object_object_add(p, "tool", mcp_tool_record(call)); /* seatd records the call */
                r = ctl_connect_as(ctl_opts.socket, token != NULL, &c, &err);
        }
        if (r >= 0 && !mcp_call_attach(call, c))
                return NULL;
        if (r >= 0) {
                r = ctl_call(c, "seat.status", p, NULL, NULL, &res, NULL, &err);
                mcp_call_detach(call);
                if (mcp_call_cancelled(call)) {
                        json_object_put(res);
                        return NULL;
                }
        }
        if (r < 0)
                return seatd_failed(r, err);
        return mcp_tool_ok(res);
}
