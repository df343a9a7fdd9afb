/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's reverse proxy parsers (web/forward-parse.c): the path, the port list, what of
 * the browser's request reaches the guest and what of the guest's response comes back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/macro.h"
#include "forward-parse.h"
#include "unit-cases.h"

TEST(path) {
        char seat[WEB_SEAT_ID_MAX + 1];
        unsigned port;
        const char *rest;
        assert_int_equal(web_forward_path("/seat/s1a2/port/8080/a/b.html", seat, sizeof(seat), &port, &rest), 0);
        assert_string_equal(seat, "s1a2");
        assert_int_equal(port, 8080);
        assert_string_equal(rest, "/a/b.html");
        assert_int_equal(web_forward_path("/seat/s1/port/80", seat, sizeof(seat), &port, &rest), 0);
        assert_string_equal(rest, "");
        /* not ours: the seat page, the API */
        assert_int_equal(web_forward_path("/seat/s1", seat, sizeof(seat), &port, &rest), -ENOENT);
        assert_int_equal(web_forward_path("/api/seat/s1/status", seat, sizeof(seat), &port, &rest), -ENOENT);
        assert_int_equal(web_forward_path("/seat/s1/ports/80/", seat, sizeof(seat), &port, &rest), -ENOENT);
        /* ours, but wrong */
        assert_int_equal(web_forward_path("/seat/s1/port/0/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/s1/port/65536/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/s1/port/080/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/s1/port/8x/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/s1/port//", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/S1/port/80/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat//port/80/", seat, sizeof(seat), &port, &rest), -EINVAL);
        assert_int_equal(web_forward_path("/seat/s1/port/80/a\nb", seat, sizeof(seat), &port, &rest), -EINVAL);
        char *longp = malloc(WEB_FORWARD_PATH_MAX + 64);
        assert_non_null(longp);
        memset(longp, 'a', WEB_FORWARD_PATH_MAX + 63);
        memcpy(longp, "/seat/s1/port/80/", 17);
        longp[WEB_FORWARD_PATH_MAX + 63] = '\0';
        assert_int_equal(web_forward_path(longp, seat, sizeof(seat), &port, &rest), -EINVAL);
        free(longp);
}

TEST(ports) {
        uint16_t p[WEB_FORWARD_PORTS_MAX];
        size_t n;
        assert_int_equal(web_forward_ports_parse("80,8080", p, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(p[0], 80);
        assert_int_equal(p[1], 8080);
        assert_int_equal(web_forward_ports_parse(" 443 , 3000 ", p, &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(web_forward_ports_parse("none", p, &n), 0);
        assert_int_equal(n, 0);
        const char *bad[] = { "", ",", "80,", "80,,81", "80,80", "0", "65536", "x", "80 81", "-1",
                              "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (web_forward_ports_parse(bad[i], p, &n) != -EINVAL)
                        fail_msg("'%s' was accepted", bad[i]);
}

static int strip(const char *h, const char *unused, char *out, size_t size) {
        (void) unused;
        return web_forward_cookie_strip(h, strlen(h), "__Host-seatweb", out, size);
}

TEST(cookie_strip) {
        static const UnitStrCase cases[] = {
                { "__Host-seatweb=abc; app=1; x=y", NULL, 0, "app=1; x=y", 0 },
                { "app=1;__Host-seatweb=abc", NULL, 0, "app=1", 0 },
                { "__Host-seatweb=abc", NULL, 0, "", 0 },
                /* given twice, or in another case: gone every time */
                { "__host-SEATWEB=a; __Host-seatweb=b; k=v", NULL, 0, "k=v", 0 },
                /* every __Host-/__Secure- cookie is seat-web's (the facilitator's session
                 * too): a guest can never have set one */
                { "__Host-seatfac=f; __Host-seatwebx=1; __SECURE-x=2; app=3", NULL, 0, "app=3", 0 },
                /* a name that only looks like ours is the guest's */
                { "seatweb=1; x__Host-seatweb=2", NULL, 0, "seatweb=1; x__Host-seatweb=2", 0 },
                { "a=1\r\nX-Evil: 1", NULL, -EBADMSG, NULL, 0 },
                { "app=1234567890", NULL, -E2BIG, .size = 8 },
        };
        unit_check_str_cases(strip, cases, ELEMENTSOF(cases), 256);
}

TEST(url_encode) {
        char out[128];
        assert_int_equal(web_forward_url_encode("/a b/c%d?e#f", false, out, sizeof(out)), 0);
        assert_string_equal(out, "/a%20b/c%25d%3Fe%23f");
        assert_int_equal(web_forward_url_encode("q=a&b c", true, out, sizeof(out)), 0);
        assert_string_equal(out, "q=a%26b%20c");
        assert_int_equal(web_forward_url_encode("/\xc3\xa9", false, out, sizeof(out)), 0);
        assert_string_equal(out, "/%C3%A9");
        assert_int_equal(web_forward_url_encode("/abc", false, out, 4), -E2BIG);
}

static int parse(const char *s, WebForwardResponse *r) {
        return web_forward_response_parse(s, strlen(s), r);
}

TEST(response) {
        WebForwardResponse r;
        const char *ok = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length:  5 \r\nX-A:\r\n\r\nhello";
        assert_int_equal(parse(ok, &r), 0);
        assert_int_equal(r.status, 200);
        assert_int_equal(r.content_length, 5);
        assert_int_equal(r.n_headers, 3);
        assert_int_equal(r.head_len, strlen(ok) - 5);
        assert_int_equal(r.headers[1].value_len, 1);
        assert_memory_equal(r.headers[1].value, "5", 1);
        assert_int_equal(r.headers[2].value_len, 0);
        assert_int_equal(parse("HTTP/1.0 404\r\n\r\n", &r), 0);
        assert_int_equal(r.status, 404);
        assert_int_equal(r.content_length, -1);
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", &r), 0);
        assert_true(r.chunked);
        /* not yet complete */
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Type: te", &r), -EAGAIN);
        assert_int_equal(parse("", &r), -EAGAIN);
        /* hostile */
        const char *bad[] = {
                "HTTP/1.1 200 OK\nX: y\r\n\r\n",            /* a bare LF */
                "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
                "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",       /* a bare CR in a value */
                "HTTP/1.1 200 OK\r\nX y: z\r\n\r\n",        /* a space in a name */
                "HTTP/1.1 200 OK\r\n: z\r\n\r\n",
                "HTTP/1.1 101 Switching\r\n\r\n",           /* 1xx: not to an HTTP/1.0 request */
                "HTTP/1.1 600 What\r\n\r\n",
                "HTTP/2 200\r\n\r\n",
                "HTTP/1.1 20 OK\r\n\r\n",
                "HTTP/1.1 200OK\r\n\r\n",
                "ICY 200 OK\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
                "HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (parse(bad[i], &r) != -EBADMSG)
                        fail_msg("accepted: %s", bad[i]);
        /* two equal lengths are one */
        assert_int_equal(parse("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n", &r), 0);
        /* too large: headers without an end, too many lines */
        size_t big = WEB_FORWARD_HEAD_MAX + 100;
        char *b = malloc(big + 1);
        assert_non_null(b);
        strcpy(b, "HTTP/1.1 200 OK\r\nX: ");
        memset(b + strlen(b), 'a', big - strlen(b));
        b[big] = '\0';
        assert_int_equal(parse(b, &r), -E2BIG);
        size_t o = (size_t) sprintf(b, "HTTP/1.1 200 OK\r\n");
        for (int i = 0; i <= WEB_FORWARD_HEADERS_MAX; i++)
                o += (size_t) sprintf(b + o, "X%d: y\r\n", i);
        strcpy(b + o, "\r\n");
        assert_int_equal(parse(b, &r), -E2BIG);
        free(b);
}

TEST(headers_allowed) {
        assert_true(web_forward_response_header_allowed("Content-Type", 12));
        assert_true(web_forward_response_header_allowed("SET-COOKIE", 10));
        const char *no[] = { "Access-Control-Allow-Origin", "Content-Security-Policy", "Strict-Transport-Security",
                             "Connection", "Transfer-Encoding", "Content-Length", "Clear-Site-Data", "X-Frame-Options",
                             "Refresh", "Link", "Server", "WWW-Authenticate" };
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                if (web_forward_response_header_allowed(no[i], strlen(no[i])))
                        fail_msg("'%s' passes", no[i]);
}

static int cookie(const char *v, const char *unused, char *out, size_t size) {
        (void) unused;
        return web_forward_set_cookie(v, strlen(v), "/seat/s1/port/80", out, size);
}

TEST(set_cookie) {
        static const UnitStrCase cases[] = {
                { "sid=abc; Path=/; Domain=evil.example; HttpOnly; SameSite=Lax", NULL, 0,
                  "sid=abc; HttpOnly; SameSite=Lax; Path=/seat/s1/port/80/", 0 },
                { "a=b", NULL, 0, "a=b; Path=/seat/s1/port/80/", 0 },
                { "a=b;path =/x; pathology=1", NULL, 0, "a=b; pathology=1; Path=/seat/s1/port/80/", 0 },
                /* what could stand in for seat-web's session cookie */
                { "__Host-seatweb=x; Path=/; Secure", NULL, -EPERM, NULL, 0 },
                { "__host-other=x", NULL, -EPERM, NULL, 0 },
                { "__Secure-x=1", NULL, -EPERM, NULL, 0 },
                { "novalue", NULL, -EPERM, NULL, 0 },
                { "=x", NULL, -EPERM, NULL, 0 },
                { "a b=x", NULL, -EPERM, NULL, 0 },
                { "a=b\r\nX: y", NULL, -EPERM, NULL, 0 },
                { "a=b", NULL, -E2BIG, .size = 10 },
        };
        unit_check_str_cases(cookie, cases, ELEMENTSOF(cases), 256);
}

static int loc(const char *v, const char *unused, char *out, size_t size) {
        (void) unused;
        return web_forward_location(v, strlen(v), "/seat/s1/port/8080", "127.0.0.1", 8080, out, size);
}

TEST(location) {
        static const UnitStrCase cases[] = {
                { "/login?x=1", NULL, 0, "/seat/s1/port/8080/login?x=1", 0 },
                { "next.html", NULL, 0, "next.html", 0 },
                { "../a:b", NULL, 0, "../a:b", 0 },
                { "http://127.0.0.1:8080/x", NULL, 0, "/seat/s1/port/8080/x", 0 },
                { "http://127.0.0.1:8080", NULL, 0, "/seat/s1/port/8080/", 0 },
                /* elsewhere: dropped */
                { "//evil.example/x", NULL, -EPERM, NULL, 0 },
                { "/\\evil.example", NULL, -EPERM, NULL, 0 },
                { "https://evil.example/", NULL, -EPERM, NULL, 0 },
                { "http://127.0.0.1:80/x", NULL, -EPERM, NULL, 0 },
                { "http://127.0.0.1:8080@evil.example/", NULL, -EPERM, NULL, 0 },
                { "javascript:alert(1)", NULL, -EPERM, NULL, 0 },
                { "/a b", NULL, -EPERM, NULL, 0 },
                { "/a\r\nX: y", NULL, -EPERM, NULL, 0 },
        };
        unit_check_str_cases(loc, cases, ELEMENTSOF(cases), 256);
        char out[256];
        assert_int_equal(web_forward_location("http://127.0.0.1/y", 18, "/p", "127.0.0.1", 80, out, sizeof(out)), 0);
        assert_string_equal(out, "/p/y");
}

TEST(ws_frames) {
        WebWsFrame f;
        const uint8_t text[] = { 0x81, 0x05, 'h', 'e', 'l', 'l', 'o', 0x89, 0x00 };
        assert_int_equal(web_ws_frame_parse(text, sizeof(text), 1024, &f), 0);
        assert_true(f.fin);
        assert_int_equal(f.opcode, WEB_WS_OP_TEXT);
        assert_int_equal(f.payload_len, 5);
        assert_memory_equal(f.payload, "hello", 5);
        assert_int_equal(f.frame_len, 7);
        assert_int_equal(web_ws_frame_parse(text + 7, 2, 1024, &f), 0);
        assert_int_equal(f.opcode, WEB_WS_OP_PING);
        assert_int_equal(web_ws_frame_parse(text, 4, 1024, &f), -EAGAIN);
        assert_int_equal(web_ws_frame_parse(text, 1, 1024, &f), -EAGAIN);
        /* 16-bit and 64-bit lengths, each in its shortest form only */
        uint8_t b16[4 + 300] = { 0x82, 126, 0x01, 0x2c };
        assert_int_equal(web_ws_frame_parse(b16, sizeof(b16), 1024, &f), 0);
        assert_int_equal(f.payload_len, 300);
        assert_int_equal(web_ws_frame_parse(b16, sizeof(b16), 299, &f), -E2BIG);
        const uint8_t short16[] = { 0x82, 126, 0x00, 0x05, 1, 2, 3, 4, 5 };
        assert_int_equal(web_ws_frame_parse(short16, sizeof(short16), 1024, &f), -EBADMSG);
        const uint8_t huge64[] = { 0x82, 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
        assert_int_equal(web_ws_frame_parse(huge64, sizeof(huge64), 1 << 20, &f), -E2BIG);
        const uint8_t top64[] = { 0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1 };
        assert_int_equal(web_ws_frame_parse(top64, sizeof(top64), 1 << 20, &f), -EBADMSG);
        /* hostile: masked from a server, reserved bits, unknown opcodes, long or fragmented control */
        const uint8_t masked[] = { 0x81, 0x81, 1, 2, 3, 4, 'x' }, rsv[] = { 0xc1, 0x00 }, op3[] = { 0x83, 0x00 },
                      longping[] = { 0x89, 126, 0x00, 0x80 }, fragclose[] = { 0x08, 0x00 };
        assert_int_equal(web_ws_frame_parse(masked, sizeof(masked), 1024, &f), -EBADMSG);
        assert_int_equal(web_ws_frame_parse(rsv, sizeof(rsv), 1024, &f), -EBADMSG);
        assert_int_equal(web_ws_frame_parse(op3, sizeof(op3), 1024, &f), -EBADMSG);
        assert_int_equal(web_ws_frame_parse(longping, sizeof(longping), 1024, &f), -EBADMSG);
        assert_int_equal(web_ws_frame_parse(fragclose, sizeof(fragclose), 1024, &f), -EBADMSG);
}

TEST(ws_header_mask) {
        const uint8_t mask[4] = { 1, 2, 3, 4 };
        uint8_t h[14], data[5] = { 'h', 'e', 'l', 'l', 'o' };
        assert_int_equal(web_ws_frame_header(h, WEB_WS_OP_TEXT, true, 5, mask), 6);
        assert_int_equal(h[0], 0x81);
        assert_int_equal(h[1], 0x85);
        assert_memory_equal(h + 2, mask, 4);
        assert_int_equal(web_ws_frame_header(h, WEB_WS_OP_BINARY, true, 300, mask), 8);
        assert_int_equal(h[1], 0x80 | 126);
        assert_int_equal(h[2] << 8 | h[3], 300);
        assert_int_equal(web_ws_frame_header(h, WEB_WS_OP_BINARY, false, 70000, mask), 14);
        assert_int_equal(h[0], 0x02);
        web_ws_mask(data, 5, mask, 0);
        assert_int_equal(data[0], 'h' ^ 1);
        assert_int_equal(data[4], 'o' ^ 1);
        web_ws_mask(data, 5, mask, 0);
        assert_memory_equal(data, "hello", 5);
}

TEST(ws_upgrade) {
        size_t head = 0;
        const char *acc = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
        const char *ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n\x81";
        assert_int_equal(web_ws_upgrade_parse(ok, strlen(ok), acc, &head), 0);
        assert_int_equal(head, strlen(ok) - 1);
        assert_int_equal(web_ws_upgrade_parse(ok, 20, acc, &head), -EAGAIN);
        assert_int_equal(web_ws_upgrade_parse("HTTP/1.1 10", 11, acc, &head), -EAGAIN);
        assert_int_equal(web_ws_upgrade_parse(ok, strlen(ok), "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", &head), -EPROTO);
        const char *notws = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        assert_int_equal(web_ws_upgrade_parse(notws, strlen(notws), acc, &head), -EPROTO);
        const char *ext = "HTTP/1.1 101 S\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                          "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n";
        assert_int_equal(web_ws_upgrade_parse(ext, strlen(ext), acc, &head), -EPROTO);
        const char *bad = "HTTP/1.1 101 S\r\nUpgrade websocket\r\n\r\n";
        assert_int_equal(web_ws_upgrade_parse(bad, strlen(bad), acc, &head), -EBADMSG);
}

TEST_MAIN("web-forward")
