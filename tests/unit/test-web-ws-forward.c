/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A relayed WebSocket's thread (web/ws-forward.c) against a scripted seatd whose "guest" is
 * a WebSocket server: the upgrade goes first with a fresh key, the browser's early message
 * waits for the 101, frames go masked, the guest's ping is answered, its messages come back
 * whole and in order, its close ends it; a wrong Sec-WebSocket-Accept or a masked frame from
 * the guest ends it with a reason. Threaded: run under TSan too.
 */
#include <errno.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/base64.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/macro.h"
#include "fake-seatd.h"
#include "forward-parse.h"
#include "ws-forward.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef enum Script { SCRIPT_ECHO, SCRIPT_BAD_ACCEPT, SCRIPT_MASKED, SCRIPT_PING_FLOOD, SCRIPT_NO_CRLF } Script;

typedef struct FakeSeatd {
        char path[108];
        int listen_fd;
        Script script;
        pthread_t thread;
        char request[4096];  /* the upgrade request the guest got */
        bool frame_before_101, got_pong, got_hello;
} FakeSeatd;

/* The next seat.forward.send's bytes (answered); -1 when the client went. */
static ssize_t next_send(int fd, uint8_t *buf, size_t size) {
        char line[16384];
        if (fake_read_line(fd, line, sizeof(line)) < 0)
                return -1;
        _cleanup_json_ json_object *o = json_tokener_parse(line);
        json_object *params = json_object_object_get(o, "params"), *v;
        fake_say(fd, "{\"id\":%lld,\"type\":\"result\",\"result\":{}}\n", (long long) json_object_get_int64(json_object_object_get(o, "id")));
        if (!json_object_object_get_ex(params, "data", &v))
                return 0;
        _cleanup_free_ void *d = NULL;
        size_t n = 0;
        assert_int_equal(base64_decode(json_object_get_string(v), json_object_get_string_len(v), size, &d, &n), 0);
        memcpy(buf, d, n);
        return (ssize_t) n;
}

static void *fake_thread(void *p) {
        FakeSeatd *f = p;
        char line[4096];
        uint8_t in[8192];
        size_t have = 0;
        int fd = accept(f->listen_fd, NULL, NULL);
        if (fd < 0)
                return NULL;
        if (fake_read_line(fd, line, sizeof(line)) < 0)
                goto done;
        fake_say(fd, "{\"id\":1,\"type\":\"result\",\"result\":{\"version\":1}}\n");
        if (fake_read_line(fd, line, sizeof(line)) < 0 || fake_read_line(fd, line, sizeof(line)) < 0)
                goto done;
        fake_say(fd, "{\"id\":3,\"type\":\"result\",\"result\":{}}\n");
        /* the upgrade request, whole */
        while (!memmem(in, have, "\r\n\r\n", 4)) {
                ssize_t n = next_send(fd, in + have, sizeof(in) - have);
                if (n < 0)
                        goto done;
                have += (size_t) n;
        }
        size_t head = (size_t) ((uint8_t *) memmem(in, have, "\r\n\r\n", 4) - in) + 4;
        memcpy(f->request, in, head);
        f->frame_before_101 = have > head;
        const char *k = strcasestr(f->request, "\r\nSec-WebSocket-Key: ");
        char key[64] = "", both[128], accept[64];
        uint8_t md[EVP_MAX_MD_SIZE];
        unsigned mdlen;
        if (k)
                sscanf(k + 21, "%60[^\r]", key);
        snprintf(both, sizeof(both), "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
        EVP_Digest(both, strlen(both), md, &mdlen, EVP_sha1(), NULL);
        base64_encode_to(md, 20, accept);
        accept[28] = '\0';
        if (f->script == SCRIPT_BAD_ACCEPT)
                accept[0] = accept[0] == 'A' ? 'B' : 'A';
        char resp[256];
        int rl = snprintf(resp, sizeof(resp), "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                              "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", accept);
        if (f->script == SCRIPT_NO_CRLF) {
                /* Not a 101, and no line end: what the log shows of it ends with what was
                 * sent (it was read up to a NUL that the buffer does not have). */
                fake_forward_data(fd, "HTTP/1.1 200 OKAY-NO-CRLF", 25);
                (void) fake_read_line(fd, line, sizeof(line)); /* until it goes */
                goto done;
        }
        if (f->script == SCRIPT_PING_FLOOD) {
                /* The 101, then pings whose pongs come to far more than the queue to the guest
                 * holds (its sends are never answered: nothing drains), then "done". */
                fake_forward_data(fd, resp, (size_t) rl);
                enum { PINGS = 1400, PAYLOAD = 125 };
                _cleanup_free_ uint8_t *flood = malloc(PINGS * (PAYLOAD + 2));
                assert_non_null(flood);
                for (size_t i = 0; i < PINGS; i++) {
                        flood[i * (PAYLOAD + 2)] = 0x89;
                        flood[i * (PAYLOAD + 2) + 1] = PAYLOAD;
                        memset(flood + i * (PAYLOAD + 2) + 2, 'p', PAYLOAD);
                }
                for (int round = 0; round < 20; round++) /* 28000 pings: 3.5 MiB of pongs */
                        fake_forward_data(fd, flood, PINGS * (PAYLOAD + 2));
                const uint8_t done[] = { 0x81, 0x04, 'd', 'o', 'n', 'e' };
                fake_forward_data(fd, done, sizeof(done));
                while (fake_read_line(fd, line, sizeof(line)) >= 0) /* unanswered, until it goes */
                        ;
                goto done;
        }
        /* the 101, a ping and a message in one go */
        uint8_t out[512];
        memcpy(out, resp, (size_t) rl);
        size_t o = (size_t) rl;
        const uint8_t ping[] = { 0x89, 0x01, 'x' }, hi[] = { 0x81, 0x0d, 'h', 'i', '-', 'f', 'r', 'o', 'm', '-', 'g', 'u', 'e', 's', 't' },
                      masked[] = { 0x81, 0x81, 1, 2, 3, 4, 'y' };
        memcpy(out + o, ping, sizeof(ping));
        o += sizeof(ping);
        if (f->script == SCRIPT_MASKED) {
                memcpy(out + o, masked, sizeof(masked));
                o += sizeof(masked);
        } else {
                memcpy(out + o, hi, sizeof(hi));
                o += sizeof(hi);
        }
        fake_forward_data(fd, out, o);
        if (f->script != SCRIPT_ECHO) {
                (void) fake_read_line(fd, line, sizeof(line)); /* until it goes */
                goto done;
        }
        /* the client's frames: "hello" and the pong, in some order */
        have -= head;
        memmove(in, in + head, have);
        while (!(f->got_hello && f->got_pong)) {
                ssize_t n = next_send(fd, in + have, sizeof(in) - have);
                if (n < 0)
                        goto done;
                have += (size_t) n;
                while (have >= 6 && (in[1] & 0x80)) {
                        size_t len = in[1] & 0x7f;
                        if (have < 6 + len)
                                break;
                        uint8_t *pl = in + 6;
                        for (size_t i = 0; i < len; i++)
                                pl[i] ^= in[2 + (i & 3)];
                        if ((in[0] & 0x0f) == 0xa && len == 1 && pl[0] == 'x')
                                f->got_pong = true;
                        if ((in[0] & 0x0f) == 0x1 && len == 5 && !memcmp(pl, "hello", 5)) {
                                f->got_hello = true;
                                const uint8_t echo[] = { 0x81, 0x0a, 'e', 'c', 'h', 'o', ':', 'h', 'e', 'l', 'l', 'o' };
                                fake_forward_data(fd, echo, sizeof(echo));
                        }
                        memmove(in, in + 6 + len, have - 6 - len);
                        have -= 6 + len;
                }
        }
        const uint8_t close_frame[] = { 0x88, 0x00 };
        fake_forward_data(fd, close_frame, sizeof(close_frame));
        (void) fake_read_line(fd, line, sizeof(line));
done:
        close(fd);
        return NULL;
}

/* A seatd that plays script, and a relayed WebSocket through it. */
static WsForward *start(FakeSeatd *f, Script script) {
        WsForward *w = NULL;
        memset(f, 0, sizeof(*f));
        f->script = script;
        assert_int_equal(fake_serve(f->path, &f->listen_fd, &f->thread, "ws-forward", fake_thread, f), 0);
        WsForwardSpec spec = { .socket_path = f->path, .seat = "s1", .token = TOKEN, .host = "127.0.0.1", .port = 8080,
                               .target = "/echo?x=1", .timeout_ms = 10000 };
        assert_int_equal(ws_forward_start(&spec, &w), 0);
        return w;
}

/* The WebSocket freed, then the script's thread joined. */
static void stop(FakeSeatd *f, WsForward *w) {
        ws_forward_free(w);
        fake_stop(f->thread, f->listen_fd, f->path);
}

/* Messages until the end (10 s at most), joined by ' '. */
static bool wait_end(WsForward *w, char *got, size_t size, char *why, size_t why_size) {
        for (int i = 0; i < 1000; i++) {
                bool binary;
                uint8_t *d;
                size_t n;
                while (ws_forward_take(w, &binary, &d, &n)) {
                        size_t o = strlen(got);
                        snprintf(got + o, size - o, "%s%.*s", o ? " " : "", (int) n, (const char *) d);
                        free(d);
                }
                if (ws_forward_ended(w, why, why_size))
                        return true;
                usleep(10000);
        }
        return false;
}

TEST(echo) {
        FakeSeatd *f = calloc(1, sizeof(*f));
        char got[256] = "", why[256];
        assert_non_null(f);
        WsForward *w = start(f, SCRIPT_ECHO);
        assert_int_equal(ws_forward_send(w, false, "hello", 5), 0); /* before the guest's 101 */
        assert_true(wait_end(w, got, sizeof(got), why, sizeof(why)));
        assert_string_equal(got, "hi-from-guest echo:hello");
        assert_non_null(strstr(why, "closed the WebSocket"));
        assert_int_equal(ws_forward_send(w, false, "late", 4), -EPIPE);
        stop(f, w);
        assert_false(f->frame_before_101);
        assert_true(f->got_hello);
        assert_true(f->got_pong);
        assert_non_null(strstr(f->request, "GET /echo?x=1 HTTP/1.1\r\n"));
        assert_non_null(strstr(f->request, "\r\nHost: 127.0.0.1:8080\r\n"));
        assert_non_null(strstr(f->request, "\r\nUpgrade: websocket\r\n"));
        assert_null(strstr(f->request, TOKEN));
        free(f);
}

/* A relayed WebSocket that a seatd playing script ends: why it ended, in want_why. */
static WsForward *start_until_end(FakeSeatd *f, Script script, char *got, size_t size, const char *want_why) {
        char why[256];
        WsForward *w = start(f, script);
        assert_true(wait_end(w, got, size, why, sizeof(why)));
        if (!strstr(why, want_why))
                fail_msg("ended with '%s', not '%s'", why, want_why);
        return w;
}

TEST(refusals) {
        FakeSeatd *f = calloc(1, sizeof(*f));
        char got[256] = "";
        assert_non_null(f);
        WsForward *w = start_until_end(f, SCRIPT_BAD_ACCEPT, got, sizeof(got), "did not accept the WebSocket");
        assert_string_equal(got, "");
        stop(f, w);

        w = start_until_end(f, SCRIPT_NO_CRLF, got, sizeof(got), "'HTTP/1.1 200 OKAY-NO-CRLF')");
        stop(f, w);

        w = start_until_end(f, SCRIPT_MASKED, got, sizeof(got), "malformed WebSocket frame");
        assert_int_equal(ws_forward_send(w, true, "x", 1), -EPIPE);
        char big[16];
        assert_int_equal(ws_forward_send(w, true, big, WS_FORWARD_MESSAGE_MAX + 1), -EMSGSIZE);
        stop(f, w);
        free(f);
}

/* A guest that floods pings while its side is not drained: the pongs stop at the queue's
 * cap (they grew seat-web without bound). */
TEST(ping_flood) {
        FakeSeatd *f = calloc(1, sizeof(*f));
        char got[256] = "";
        assert_non_null(f);
        WsForward *w = start(f, SCRIPT_PING_FLOOD);
        for (int i = 0; i < 9000 && !strstr(got, "done"); i++) { /* 90 s: slow under sanitizers */
                bool binary;
                uint8_t *d;
                size_t n;
                while (ws_forward_take(w, &binary, &d, &n)) {
                        snprintf(got, sizeof(got), "%.*s", (int) n, (const char *) d);
                        free(d);
                }
                usleep(10000);
        }
        assert_string_equal(got, "done"); /* every ping before it was read */
        size_t queued = ws_forward_to_guest_bytes(w);
        assert_true(queued <= WS_FORWARD_QUEUE_MAX);
        assert_true(queued > WS_FORWARD_QUEUE_MAX / 2); /* pongs were queued up to the cap */
        stop(f, w);
        free(f);
}

TEST_MAIN("web-ws-forward")
