/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's request parsers: form fields, cookies, routes, ids. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "http-parse.h"

static int form(const char *body, const char *key, char *out, size_t size) {
        return web_form_get(body, strlen(body), key, out, size);
}

static void test_form(void **state) {
        char v[80];
        assert_int_equal(form("seat=s1&token=abc", "seat", v, sizeof(v)), 0);
        assert_string_equal(v, "s1");
        assert_int_equal(form("seat=s1&token=abc", "token", v, sizeof(v)), 0);
        assert_string_equal(v, "abc");
        assert_int_equal(form("a=b+c%20d%2Fe", "a", v, sizeof(v)), 0);
        assert_string_equal(v, "b c d/e");
        assert_int_equal(form("seat=&x=1", "seat", v, sizeof(v)), 0);
        assert_string_equal(v, "");
        assert_int_equal(form("seat", "seat", v, sizeof(v)), 0);
        assert_string_equal(v, "");
        assert_int_equal(form("&&seat=x&&", "seat", v, sizeof(v)), 0);
        assert_string_equal(v, "x");
        /* absent, twice, malformed, too long */
        assert_int_equal(form("seats=x", "seat", v, sizeof(v)), -ENOENT);
        assert_int_equal(form("", "seat", v, sizeof(v)), -ENOENT);
        assert_int_equal(form("seat=a&seat=b", "seat", v, sizeof(v)), -ENOTUNIQ);
        assert_int_equal(form("seat=%zz", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("seat=%4", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("seat=%", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("seat=a%00b", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("seat=a%0ab", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("=x&seat=a", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("other=%zz&seat=a", "seat", v, sizeof(v)), -EBADMSG);
        assert_int_equal(form("seat=abcdef", "seat", v, 4), -E2BIG);
        char big[WEB_FORM_MAX + 10];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        memcpy(big, "seat=", 5);
        assert_int_equal(form(big, "seat", v, sizeof(v)), -EBADMSG);
}

static int cookie(const char *h, const char *name, char *out, size_t size) {
        return web_cookie_get(h, strlen(h), name, out, size);
}

static void test_cookie(void **state) {
        char v[64];
        assert_int_equal(cookie("__Host-seatweb=abc", "__Host-seatweb", v, sizeof(v)), 0);
        assert_string_equal(v, "abc");
        assert_int_equal(cookie("a=1; __Host-seatweb=xyz;b=2", "__Host-seatweb", v, sizeof(v)), 0);
        assert_string_equal(v, "xyz");
        assert_int_equal(cookie("a=\"q\"", "a", v, sizeof(v)), 0);
        assert_string_equal(v, "q");
        assert_int_equal(cookie("a=1; ;  b=2 ", "b", v, sizeof(v)), 0);
        assert_string_equal(v, "2");
        assert_int_equal(cookie("a=1", "b", v, sizeof(v)), -ENOENT);
        assert_int_equal(cookie("", "b", v, sizeof(v)), -ENOENT);
        assert_int_equal(cookie("b=1; b=2", "b", v, sizeof(v)), -ENOTUNIQ);
        assert_int_equal(cookie("b=1;b=1", "b", v, sizeof(v)), -ENOTUNIQ);
        assert_int_equal(cookie("b", "b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(cookie("=1", "b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(cookie("b=a,b", "b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(cookie("b=a\\b", "b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(cookie("b=a b", "b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(cookie("b=abcdef", "b", v, 4), -E2BIG);
        assert_int_equal(cookie("x y=1; b=2", "b", v, sizeof(v)), -EBADMSG);
}

static int bearer(const char *h, char *out, size_t size) {
        return web_bearer_get(h, strlen(h), out, size);
}

static void test_bearer(void **state) {
        char v[WEB_TOKEN_HEX + 2];
        assert_int_equal(bearer("Bearer abc", v, sizeof(v)), 0);
        assert_string_equal(v, "abc");
        assert_int_equal(bearer("bearer   a-b._~+/c==  ", v, sizeof(v)), 0);
        assert_string_equal(v, "a-b._~+/c==");
        assert_int_equal(bearer("Basic YTpi", v, sizeof(v)), -ENOENT);
        assert_int_equal(bearer("BearerX abc", v, sizeof(v)), -ENOENT);
        assert_int_equal(bearer("", v, sizeof(v)), -ENOENT);
        assert_int_equal(bearer("Bearer", v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer ", v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer a b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer a,b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer a=b", v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer \"abc\"", v, sizeof(v)), -EBADMSG);
        assert_int_equal(web_bearer_get("Bearer ab\0c", 11, v, sizeof(v)), -EBADMSG);
        assert_int_equal(bearer("Bearer abcdef", v, 4), -E2BIG);
}

static void test_ids(void **state) {
        assert_true(web_seat_id_valid("s1a2b3c4d"));
        assert_false(web_seat_id_valid(""));
        assert_false(web_seat_id_valid("S1"));
        assert_false(web_seat_id_valid("1s"));
        assert_false(web_seat_id_valid("s/../x"));
        assert_false(web_seat_id_valid("s12345678901234567890123456789012"));
        char tok[WEB_TOKEN_HEX + 2];
        memset(tok, 'a', WEB_TOKEN_HEX);
        tok[WEB_TOKEN_HEX] = '\0';
        assert_true(web_token_valid(tok));
        tok[3] = 'A';
        assert_false(web_token_valid(tok));
        tok[3] = 'a';
        tok[WEB_TOKEN_HEX] = 'a';
        tok[WEB_TOKEN_HEX + 1] = '\0';
        assert_false(web_token_valid(tok));
        assert_true(web_session_id_valid("abcdefghijklmnopqrstuvwxyz0123456789-_ABCDE"));
        assert_false(web_session_id_valid("abcdefghijklmnopqrstuvwxyz0123456789-_ABCD="));
        assert_false(web_session_id_valid("short"));
}

/* The guest paths a participant may name, and the numbers of a file chunk's query. */
static void test_file_query(void **state) {
        assert_true(web_guest_path_valid("/tmp/x"));
        assert_true(web_guest_path_valid("/root/a b/ü.txt"));
        assert_true(web_guest_path_valid("/.hidden/..name"));
        assert_false(web_guest_path_valid(""));
        assert_false(web_guest_path_valid("/"));
        assert_false(web_guest_path_valid("tmp/x"));
        assert_false(web_guest_path_valid("/tmp/"));
        assert_false(web_guest_path_valid("/tmp//x"));
        assert_false(web_guest_path_valid("/tmp/../etc/shadow"));
        assert_false(web_guest_path_valid("/tmp/./x"));
        assert_false(web_guest_path_valid("/.."));
        assert_false(web_guest_path_valid("/tmp/a\nb"));
        assert_false(web_guest_path_valid("/tmp/a\x7f"));
        char long_path[WEB_FILE_PATH_MAX + 2];
        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = '\0';
        assert_false(web_guest_path_valid(long_path));
        long_path[WEB_FILE_PATH_MAX] = '\0';
        assert_true(web_guest_path_valid(long_path));

        uint64_t v;
        assert_int_equal(web_parse_u64("0", 10, &v), 0);
        assert_int_equal(v, 0);
        assert_int_equal(web_parse_u64("524288", 524288, &v), 0);
        assert_int_equal(v, 524288);
        assert_int_equal(web_parse_u64("524289", 524288, &v), -ERANGE);
        assert_int_equal(web_parse_u64("", 10, &v), -EINVAL);
        assert_int_equal(web_parse_u64("-1", 10, &v), -EINVAL);
        assert_int_equal(web_parse_u64("+1", 10, &v), -EINVAL);
        assert_int_equal(web_parse_u64(" 1", 10, &v), -EINVAL);
        assert_int_equal(web_parse_u64("1x", 10, &v), -EINVAL);
        assert_int_equal(web_parse_u64("99999999999999999999", UINT64_MAX, &v), -ERANGE);
}

static void test_routes(void **state) {
        char a[64];
        const char *mime = NULL;
        assert_int_equal(web_route("/", a, sizeof(a), NULL), WEB_ROUTE_LOGIN_PAGE);
        assert_int_equal(web_route("/login", a, sizeof(a), NULL), WEB_ROUTE_LOGIN);
        assert_int_equal(web_route("/logout", a, sizeof(a), NULL), WEB_ROUTE_LOGOUT);
        assert_int_equal(web_route("/seat/s1", a, sizeof(a), NULL), WEB_ROUTE_SEAT_PAGE);
        assert_string_equal(a, "s1");
        assert_int_equal(web_route("/api/seat/sab/status", a, sizeof(a), NULL), WEB_ROUTE_SEAT_STATUS);
        assert_string_equal(a, "sab");
        assert_int_equal(web_route("/api/seat/sfi/file", a, sizeof(a), NULL), WEB_ROUTE_SEAT_FILE);
        assert_string_equal(a, "sfi");
        assert_int_equal(web_route("/api/seat/sab/files", a, sizeof(a), NULL), WEB_ROUTE_NONE);
        assert_int_equal(web_route("/api/seat/sab/file/x", a, sizeof(a), NULL), WEB_ROUTE_NONE);
        assert_int_equal(web_route("/static/seat.js", a, sizeof(a), &mime), WEB_ROUTE_STATIC);
        assert_string_equal(a, "seat.js");
        assert_string_equal(mime, "text/javascript; charset=utf-8");
        assert_int_equal(web_route("/mcp/s1a2", a, sizeof(a), NULL), WEB_ROUTE_MCP);
        assert_string_equal(a, "s1a2");
        assert_int_equal(web_route("/static/xterm.css", a, sizeof(a), &mime), WEB_ROUTE_STATIC);
        assert_string_equal(mime, "text/css; charset=utf-8");
        assert_int_equal(web_route("/ws/seat/sab/terminal", a, sizeof(a), NULL), WEB_ROUTE_SEAT_TERMINAL);
        assert_string_equal(a, "sab");
        static const char *const none[] = {
                "/mcp", "/mcp/", "/mcp/s1/", "/mcp/S1", "/mcp/s1/x", "/mcp/../login",
                "/ws/seat/sab", "/ws/seat/sab/", "/ws/seat/sab/terminal/", "/ws/seat//terminal", "/ws/seat/S1/terminal",
                "/static/seat.html", "/static/xterm.js.map",
                "", "/x", "/seat/", "/seat/S1", "/seat/s1/", "/seat/s1/x", "/seat/../etc", "/api/seat/s1",
                "/api/seat/s1/status/", "/api/seat//status", "/static/", "/static/../conf.c", "/static/login.html",
                "/static/seat.js/", "/static/style.css.bak", "//", "/login/",
        };
        for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
                if (web_route(none[i], a, sizeof(a), NULL) != WEB_ROUTE_NONE)
                        fail_msg("'%s' is routed", none[i]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_form),
                cmocka_unit_test(test_cookie),
                cmocka_unit_test(test_bearer),
                cmocka_unit_test(test_ids),
                cmocka_unit_test(test_routes),
                cmocka_unit_test(test_file_query),
        };
        return cmocka_run_group_tests_name("web-parse", tests, NULL, NULL);
}
