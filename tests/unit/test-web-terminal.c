/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A browser terminal's thread (web/terminal.c) against a scripted seatd on a Unix socket:
 * what it asks (hello, then seat.exec with a pty and live stdin, the session's token),
 * typed input as seat.exec.stdin in order, resizes coalesced, output handed over whole and
 * in order, the end with its status, seatd's refusal and its disappearance, and a free while
 * the shell runs (the connection closes: seatd kills the shell). Threaded: run under TSan too.
 */
#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "fake-seatd.h"
#include "terminal.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef enum Script { SCRIPT_SESSION, SCRIPT_DENIED, SCRIPT_VANISH, SCRIPT_HOLD } Script;

typedef struct FakeSeatd {
        char path[108];
        int listen_fd;
        Script script;
        pthread_t thread;
        /* what it saw (read after the join) */
        char exec_line[8192];
        char stdin_seen[256];
        size_t stdin_len;
        int resizes, last_rows, last_cols;
        bool peer_closed;
} FakeSeatd;

static void output(int fd, const char *text) {
        _cleanup_free_ char *b64 = NULL;
        assert_int_equal(base64_encode(text, strlen(text), &b64, NULL), 0);
        fake_say(fd, "{\"id\":2,\"type\":\"output\",\"output\":{\"stream\":\"pty\",\"data\":\"%s\"}}\n", b64);
}

static void *fake_thread(void *p) {
        FakeSeatd *f = p;
        char line[8192];
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
                return NULL;
        if (fake_read_line(fd, line, sizeof(line)) < 0 || !strstr(line, "\"hello\""))
                goto done;
        fake_say(fd, "{\"id\":1,\"type\":\"result\",\"result\":{\"version\":1}}\n");
        if (fake_read_line(fd, line, sizeof(line)) < 0)
                goto done;
        snprintf(f->exec_line, sizeof(f->exec_line), "%s", line);
        if (f->script == SCRIPT_DENIED) {
                fake_say(fd, "{\"id\":2,\"type\":\"error\",\"error\":{\"code\":\"denied\",\"message\":\"this token does not open seat 's1'\"}}\n");
                goto done;
        }
        if (f->script == SCRIPT_VANISH)
                goto done;
        output(fd, "welcome\r\n# ");
        /* Follow-ups until "exit\r" was typed (or the client goes: SCRIPT_HOLD). */
        while (fake_read_line(fd, line, sizeof(line)) >= 0) {
                _cleanup_json_ json_object *o = json_tokener_parse(line);
                json_object *params = NULL, *v = NULL;
                const char *method = json_object_get_string(json_object_object_get(o, "method"));
                int64_t id = json_object_get_int64(json_object_object_get(o, "id"));
                params = json_object_object_get(o, "params");
                if (method && !strcmp(method, "seat.exec.resize")) {
                        f->resizes++;
                        f->last_rows = json_object_get_int(json_object_object_get(params, "rows"));
                        f->last_cols = json_object_get_int(json_object_object_get(params, "cols"));
                } else if (method && !strcmp(method, "seat.exec.stdin") && json_object_object_get_ex(params, "data", &v)) {
                        _cleanup_free_ void *d = NULL;
                        size_t n = 0;
                        assert_int_equal(base64_decode(json_object_get_string(v), json_object_get_string_len(v), 1024, &d, &n), 0);
                        if (f->stdin_len + n < sizeof(f->stdin_seen)) {
                                memcpy(f->stdin_seen + f->stdin_len, d, n);
                                f->stdin_len += n;
                        }
                }
                fake_say(fd, "{\"id\":%lld,\"type\":\"result\",\"result\":{}}\n", (long long) id);
                if (f->script == SCRIPT_SESSION && memmem(f->stdin_seen, f->stdin_len, "exit\r", 5)) {
                        output(fd, "bye\r\n");
                        fake_say(fd, "{\"id\":2,\"type\":\"result\",\"result\":{\"code\":3,\"signal\":0}}\n");
                        break;
                }
        }
        if (f->script == SCRIPT_HOLD)
                f->peer_closed = true; /* read_line saw the end: the terminal closed it */
done:
        close(fd);
        return NULL;
}

static void fake_start(FakeSeatd *f, Script script) {
        *f = (FakeSeatd) { .script = script };
        assert_int_equal(fake_serve(f->path, &f->listen_fd, &f->thread, "terminal", fake_thread, f), 0);
}

static void fake_join(FakeSeatd *f) {
        fake_stop(f->thread, f->listen_fd, f->path);
}

/* Everything the terminal printed until pred holds on it (10 s at most). */
static bool wait_output(Terminal *t, char *buf, size_t size, size_t *len, const char *want) {
        for (int i = 0; i < 1000; i++) {
                *len += terminal_take_output(t, buf + *len, size - 1 - *len);
                buf[*len] = '\0';
                if (strstr(buf, want))
                        return true;
                usleep(10000);
        }
        return false;
}

static bool wait_end(Terminal *t, int *code, char *msg, size_t size) {
        char sink[256];
        for (int i = 0; i < 1000; i++) {
                (void) terminal_take_output(t, sink, sizeof(sink));
                if (terminal_ended(t, code, msg, size))
                        return true;
                usleep(10000);
        }
        return false;
}

static Terminal *start(FakeSeatd *f) {
        Terminal *t = NULL;
        TerminalSpec spec = { .socket_path = f->path, .seat = "s1", .token = TOKEN, .rows = 24, .cols = 80 };
        assert_int_equal(terminal_start(&spec, &t), 0);
        return t;
}

TEST(session) {
        FakeSeatd f;
        char out[1024] = "", msg[256];
        size_t len = 0;
        int code = 0;
        fake_start(&f, SCRIPT_SESSION);
        Terminal *t = start(&f);
        assert_true(wait_output(t, out, sizeof(out), &len, "welcome\r\n# "));
        /* Three sizes in a row: only the last need reach seatd. */
        assert_int_equal(terminal_resize(t, 30, 100), 0);
        assert_int_equal(terminal_resize(t, 40, 120), 0);
        assert_int_equal(terminal_resize(t, 0, 120), -EINVAL);
        assert_int_equal(terminal_resize(t, 50, 1001), -EINVAL);
        assert_int_equal(terminal_input(t, NULL, 0), 0); /* an empty WebSocket message */
        assert_int_equal(terminal_input(t, "ls", 2), 0);
        assert_int_equal(terminal_input(t, " -l\r", 4), 0);
        assert_int_equal(terminal_input(t, "exit\r", 5), 0);
        assert_true(wait_output(t, out, sizeof(out), &len, "bye\r\n"));
        assert_true(wait_end(t, &code, msg, sizeof(msg)));
        assert_int_equal(code, 3);
        assert_non_null(strstr(msg, "status 3"));
        assert_int_equal(terminal_input(t, "x", 1), -EPIPE);
        terminal_free(t);
        fake_join(&f);
        /* What seatd was asked: the shell with a pty and live stdin, with the token. */
        _cleanup_json_ json_object *o = json_tokener_parse(f.exec_line);
        json_object *p = json_object_object_get(o, "params");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "method")), "seat.exec");
        assert_string_equal(json_object_get_string(json_object_object_get(p, "token")), TOKEN);
        assert_string_equal(json_object_get_string(json_object_object_get(p, "seat")), "s1");
        assert_true(json_object_get_boolean(json_object_object_get(p, "stdin_live")));
        assert_int_equal(json_object_get_int(json_object_object_get(json_object_object_get(p, "pty"), "rows")), 24);
        /* Typed input whole and in order; the last size sent last. */
        assert_int_equal(f.stdin_len, 11);
        assert_memory_equal(f.stdin_seen, "ls -l\rexit\r", 11);
        assert_true(f.resizes >= 1 && f.resizes <= 2);
        assert_int_equal(f.last_rows, 40);
        assert_int_equal(f.last_cols, 120);
}

/* A terminal against script: it ends with a message holding needle; its exit code. */
static int expect_end(Script script, const char *needle) {
        FakeSeatd f;
        char msg[256];
        int code = 0;
        fake_start(&f, script);
        Terminal *t = start(&f);
        assert_true(wait_end(t, &code, msg, sizeof(msg)));
        assert_non_null(strstr(msg, needle));
        terminal_free(t);
        fake_join(&f);
        return code;
}

TEST(denied) {
        assert_int_equal(expect_end(SCRIPT_DENIED, "reset or released"), -1);
}

TEST(vanish) {
        (void) expect_end(SCRIPT_VANISH, "seatd closed");
}

TEST(no_seatd) {
        char msg[256];
        int code = 0;
        Terminal *t = NULL;
        TerminalSpec spec = { .socket_path = "/nonexistent/seatd.sock", .seat = "s1", .token = TOKEN, .rows = 1, .cols = 1 };
        assert_int_equal(terminal_start(&spec, &t), 0);
        assert_true(wait_end(t, &code, msg, sizeof(msg)));
        assert_non_null(strstr(msg, "cannot be reached"));
        terminal_free(t);
        spec.rows = 0;
        assert_int_equal(terminal_start(&spec, &t), -EINVAL);
}

/* The browser goes while the shell runs: freeing closes seatd's connection. */
/* A terminal whose shell is up and stays (SCRIPT_HOLD). */
static Terminal *start_held(FakeSeatd *f) {
        char out[256] = "";
        size_t len = 0;
        fake_start(f, SCRIPT_HOLD);
        Terminal *t = start(f);
        assert_true(wait_output(t, out, sizeof(out), &len, "welcome"));
        return t;
}

TEST(free_while_running) {
        FakeSeatd f;
        Terminal *t = start_held(&f);
        assert_int_equal(terminal_input(t, "sleep 100\r", 10), 0);
        terminal_free(t);
        fake_join(&f);
        assert_true(f.peer_closed);
}

/* Input over the cap is refused whole (the caller stops reading the browser before). */
TEST(input_cap) {
        FakeSeatd f;
        Terminal *t = start_held(&f);
        _cleanup_free_ char *big = malloc(TERMINAL_IN_CAP + 1);
        memset(big, 'a', TERMINAL_IN_CAP + 1);
        assert_int_equal(terminal_input(t, big, TERMINAL_IN_CAP + 1), -ENOBUFS);
        terminal_free(t);
        fake_join(&f);
}

TEST_MAIN("web-terminal")
