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
#include <cmocka.h>

#include "forward-parse.h"

static void test_path(void **state) {
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

static void test_ports(void **state) {
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

static int strip(const char *h, char *out, size_t size) {
        return web_forward_cookie_strip(h, strlen(h), "__Host-seatweb", out, size);
}

static void test_cookie_strip(void **state) {
        char out[256];
        assert_int_equal(strip("__Host-seatweb=abc; app=1; x=y", out, sizeof(out)), 0);
        assert_string_equal(out, "app=1; x=y");
        assert_int_equal(strip("app=1;__Host-seatweb=abc", out, sizeof(out)), 0);
        assert_string_equal(out, "app=1");
        assert_int_equal(strip("__Host-seatweb=abc", out, sizeof(out)), 0);
        assert_string_equal(out, "");
        /* given twice, or in another case: gone every time */
        assert_int_equal(strip("__host-SEATWEB=a; __Host-seatweb=b; k=v", out, sizeof(out)), 0);
        assert_string_equal(out, "k=v");
        /* a name that only starts like ours is another cookie */
        assert_int_equal(strip("__Host-seatwebx=1", out, sizeof(out)), 0);
        assert_string_equal(out, "__Host-seatwebx=1");
        assert_int_equal(strip("a=1\r\nX-Evil: 1", out, sizeof(out)), -EBADMSG);
        assert_int_equal(strip("app=1234567890", out, 8), -E2BIG);
}

static void test_url_encode(void **state) {
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

static void test_response(void **state) {
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

static void test_headers_allowed(void **state) {
        assert_true(web_forward_response_header_allowed("Content-Type", 12));
        assert_true(web_forward_response_header_allowed("SET-COOKIE", 10));
        const char *no[] = { "Access-Control-Allow-Origin", "Content-Security-Policy", "Strict-Transport-Security",
                             "Connection", "Transfer-Encoding", "Content-Length", "Clear-Site-Data", "X-Frame-Options",
                             "Refresh", "Link", "Server" };
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                if (web_forward_response_header_allowed(no[i], strlen(no[i])))
                        fail_msg("'%s' passes", no[i]);
}

static int cookie(const char *v, char *out, size_t size) {
        return web_forward_set_cookie(v, strlen(v), "/seat/s1/port/80", out, size);
}

static void test_set_cookie(void **state) {
        char out[256];
        assert_int_equal(cookie("sid=abc; Path=/; Domain=evil.example; HttpOnly; SameSite=Lax", out, sizeof(out)), 0);
        assert_string_equal(out, "sid=abc; HttpOnly; SameSite=Lax; Path=/seat/s1/port/80/");
        assert_int_equal(cookie("a=b", out, sizeof(out)), 0);
        assert_string_equal(out, "a=b; Path=/seat/s1/port/80/");
        assert_int_equal(cookie("a=b;path =/x; pathology=1", out, sizeof(out)), 0);
        assert_string_equal(out, "a=b; pathology=1; Path=/seat/s1/port/80/");
        /* what could stand in for seat-web's session cookie */
        assert_int_equal(cookie("__Host-seatweb=x; Path=/; Secure", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("__host-other=x", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("__Secure-x=1", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("novalue", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("=x", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("a b=x", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("a=b\r\nX: y", out, sizeof(out)), -EPERM);
        assert_int_equal(cookie("a=b", out, 10), -E2BIG);
}

static int loc(const char *v, char *out, size_t size) {
        return web_forward_location(v, strlen(v), "/seat/s1/port/8080", "127.0.0.1", 8080, out, size);
}

static void test_location(void **state) {
        char out[256];
        assert_int_equal(loc("/login?x=1", out, sizeof(out)), 0);
        assert_string_equal(out, "/seat/s1/port/8080/login?x=1");
        assert_int_equal(loc("next.html", out, sizeof(out)), 0);
        assert_string_equal(out, "next.html");
        assert_int_equal(loc("../a:b", out, sizeof(out)), 0);
        assert_string_equal(out, "../a:b");
        assert_int_equal(loc("http://127.0.0.1:8080/x", out, sizeof(out)), 0);
        assert_string_equal(out, "/seat/s1/port/8080/x");
        assert_int_equal(loc("http://127.0.0.1:8080", out, sizeof(out)), 0);
        assert_string_equal(out, "/seat/s1/port/8080/");
        /* elsewhere: dropped */
        const char *no[] = { "//evil.example/x", "/\\evil.example", "https://evil.example/", "http://127.0.0.1:80/x",
                             "http://127.0.0.1:8080@evil.example/", "javascript:alert(1)", "/a b", "/a\r\nX: y" };
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                if (loc(no[i], out, sizeof(out)) != -EPERM)
                        fail_msg("'%s' kept as '%s'", no[i], out);
        assert_int_equal(web_forward_location("http://127.0.0.1/y", 18, "/p", "127.0.0.1", 80, out, sizeof(out)), 0);
        assert_string_equal(out, "/p/y");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path),        cmocka_unit_test(test_ports),
                cmocka_unit_test(test_cookie_strip), cmocka_unit_test(test_url_encode),
                cmocka_unit_test(test_response),    cmocka_unit_test(test_headers_allowed),
                cmocka_unit_test(test_set_cookie),  cmocka_unit_test(test_location),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
