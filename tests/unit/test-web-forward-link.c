/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One proxied exchange (web/forward-link.c) against a scripted seatd on a Unix socket: what
 * it asks (hello, seat.forward with the session's token and the target, one stream), the
 * request's bytes in order with eof on the last chunk, the guest's bytes back whole; and
 * seatd's refusal (denied), a guest that refuses the connection, one that sends more than
 * the cap, one that says nothing (the deadline), and a seatd that vanishes.
 */
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "common/jsonframe.h"
#include "common/fileio.h"
#include "common/macro.h"
#include "fake-seatd.h"
#include "forward-link.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef enum Script { SCRIPT_ECHO, SCRIPT_DENIED, SCRIPT_REFUSED, SCRIPT_FLOOD, SCRIPT_SILENT, SCRIPT_VANISH } Script;

typedef struct FakeSeatd {
        char path[108];
        int listen_fd;
        Script script;
        pthread_t thread;
        char forward_line[4096];
        unsigned char got[200000]; /* the request as the guest would get it */
        size_t got_len;
        bool got_eof;
} FakeSeatd;

static void *fake_thread(void *p) {
        FakeSeatd *f = p;
        static char line[300000];
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
                return NULL;
        if (fake_read_line(fd, line, sizeof(line)) < 0 || !strstr(line, "\"hello\""))
                goto done;
        if (f->script == SCRIPT_VANISH)
                goto done;
        fake_say(fd, "{\"id\":1,\"type\":\"result\",\"result\":{\"version\":1}}\n");
        if (fake_read_line(fd, line, sizeof(line)) < 0)
                goto done;
        size_t k = strlen(line);
        assert_true(k < sizeof(f->forward_line));
        memcpy(f->forward_line, line, k + 1);
        if (f->script == SCRIPT_DENIED) {
                fake_say(fd, "{\"id\":2,\"type\":\"error\",\"error\":{\"code\":\"denied\",\"message\":\"this token does not open seat 's1'\"}}\n");
                /* As seatd does, keep the connection until the client goes: closing with its
                 * pipelined seat.forward.open unread would reset it and lose the error line. */
                while (fake_read_line(fd, line, sizeof(line)) >= 0)
                        ;
                goto done;
        }
        if (fake_read_line(fd, line, sizeof(line)) < 0 || !strstr(line, "seat.forward.open"))
                goto done;
        if (f->script == SCRIPT_REFUSED) {
                fake_say(fd, "{\"id\":3,\"type\":\"error\",\"error\":{\"code\":\"io\",\"message\":\"connect to 127.0.0.1:81: Connection refused\"}}\n");
                goto done;
        }
        fake_say(fd, "{\"id\":3,\"type\":\"result\",\"result\":{}}\n");
        /* The request, chunk after chunk, until eof. */
        while (!f->got_eof && fake_read_line(fd, line, sizeof(line)) >= 0) {
                _cleanup_json_ json_object *o = json_tokener_parse(line);
                json_object *params = json_object_object_get(o, "params"), *v;
                int64_t id = json_object_get_int64(json_object_object_get(o, "id"));
                if (json_object_object_get_ex(params, "data", &v)) {
                        _cleanup_free_ void *d = NULL;
                        size_t n = 0;
                        assert_int_equal(base64_decode(json_object_get_string(v), json_object_get_string_len(v), 65536, &d, &n), 0);
                        assert_true(f->got_len + n <= sizeof(f->got));
                        memcpy(f->got + f->got_len, d, n);
                        f->got_len += n;
                }
                f->got_eof = json_object_object_get_ex(params, "eof", &v) && json_object_get_boolean(v);
                fake_say(fd, "{\"id\":%lld,\"type\":\"result\",\"result\":{}}\n", (long long) id);
        }
        if (f->script == SCRIPT_SILENT) {
                (void) fake_read_line(fd, line, sizeof(line)); /* until the client gives up */
                goto done;
        }
        if (f->script == SCRIPT_FLOOD) {
                static char big[40000];
                memset(big, 'x', sizeof(big));
                for (int i = 0; i < 4; i++)
                        fake_forward_data(fd, big, sizeof(big));
        } else {
                /* the request back, in two pieces, then the guest's end */
                fake_forward_data(fd, "HTTP/1.0 200 OK\r\n\r\n", 19);
                fake_forward_data(fd, f->got, f->got_len / 2);
                fake_forward_data(fd, f->got + f->got_len / 2, f->got_len - f->got_len / 2);
        }
        fake_say(fd, "{\"id\":2,\"type\":\"eof\",\"eof\":{\"stream\":3}}\n");
        (void) fake_read_line(fd, line, sizeof(line));
done:
        close(fd);
        return NULL;
}

/* One exchange through forward_exchange() with a seatd that plays script: its return. */
static int exchange(FakeSeatd *f, Script script, const void *req, size_t len, size_t max, int timeout_ms, uint8_t **resp,
                    size_t *resp_len, char code[32], char *msg, size_t msize) {
        memset(f, 0, sizeof(*f));
        f->script = script;
        assert_int_equal(fake_serve(f->path, &f->listen_fd, &f->thread, "forward", fake_thread, f), 0);
        ForwardTarget t = { .socket_path = f->path, .seat = "s1", .token = TOKEN, .host = "127.0.0.1", .port = 8080,
                            .timeout_ms = timeout_ms, .max_response = max };
        int r = forward_exchange(&t, req, len, resp, resp_len, code, msg, msize);
        fake_stop(f->thread, f->listen_fd, f->path);
        return r;
}

TEST(echo) {
        FakeSeatd *f = calloc(1, sizeof(*f));
        char code[32], msg[256];
        uint8_t *resp = NULL;
        size_t n = 0;
        /* 100 000 bytes: four chunks, eof on the last */
        size_t len = 100000;
        char *req = malloc(len);
        assert_non_null(f);
        assert_non_null(req);
        for (size_t i = 0; i < len; i++)
                req[i] = (char) ('a' + i % 26);
        memcpy(req, "GET / HTTP/1.0\r\n", 16);
        assert_int_equal(exchange(f, SCRIPT_ECHO, req, len, 1 << 20, 10000, &resp, &n, code, msg, sizeof(msg)), 0);
        assert_true(f->got_eof);
        assert_int_equal(f->got_len, len);
        assert_memory_equal(f->got, req, len);
        assert_int_equal(n, 19 + len);
        assert_memory_equal(resp, "HTTP/1.0 200 OK\r\n\r\n", 19);
        assert_memory_equal(resp + 19, req, len);
        assert_int_equal(resp[n], 0);
        /* what seatd was asked: the seat, the session's token, the target */
        _cleanup_json_ json_object *o = json_tokener_parse(f->forward_line);
        json_object *p = json_object_object_get(o, "params");
        assert_string_equal(json_object_get_string(json_object_object_get(o, "method")), "seat.forward");
        assert_string_equal(json_object_get_string(json_object_object_get(p, "seat")), "s1");
        assert_string_equal(json_object_get_string(json_object_object_get(p, "token")), TOKEN);
        assert_string_equal(json_object_get_string(json_object_object_get(p, "host")), "127.0.0.1");
        assert_int_equal(json_object_get_int(json_object_object_get(p, "port")), 8080);
        free(resp);
        free(req);
        free(f);
}

TEST(refusals) {
        FakeSeatd *f = calloc(1, sizeof(*f));
        char code[32], msg[256];
        uint8_t *resp = NULL;
        size_t n = 0;
        const char *req = "GET / HTTP/1.0\r\n\r\n";
        size_t len = strlen(req);
        assert_non_null(f);

        assert_int_equal(exchange(f, SCRIPT_DENIED, req, len, 1 << 20, 10000, &resp, &n, code, msg, sizeof(msg)), -EACCES);
        assert_string_equal(code, "denied");
        assert_int_equal(exchange(f, SCRIPT_REFUSED, req, len, 1 << 20, 10000, &resp, &n, code, msg, sizeof(msg)),
                         -ECONNREFUSED);
        assert_non_null(strstr(msg, "Connection refused"));
        assert_int_equal(exchange(f, SCRIPT_FLOOD, req, len, 100000, 10000, &resp, &n, code, msg, sizeof(msg)), -EFBIG);

        int64_t t0 = now_monotonic_ms();
        assert_int_equal(exchange(f, SCRIPT_SILENT, req, len, 100000, 300, &resp, &n, code, msg, sizeof(msg)), -ETIMEDOUT);
        assert_true(now_monotonic_ms() - t0 < 5000);

        int r = exchange(f, SCRIPT_VANISH, req, len, 100000, 10000, &resp, &n, code, msg, sizeof(msg));
        assert_true(r == -ECONNRESET || r == -EPIPE);
        assert_null(resp);
        free(f);
}

TEST_MAIN("web-forward-link")
