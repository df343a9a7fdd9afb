/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's request parsers: form fields, cookies, routes, ids. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/macro.h"
#include "http-parse.h"
#include "unit-cases.h"

static int form(const char *body, const char *key, char *out, size_t size) {
        return web_form_get(body, strlen(body), key, out, size);
}

TEST(form) {
        static const UnitStrCase cases[] = {
                { "seat=s1&token=abc", "seat", 0, "s1", 0 },
                { "seat=s1&token=abc", "token", 0, "abc", 0 },
                { "a=b+c%20d%2Fe", "a", 0, "b c d/e", 0 },
                { "seat=&x=1", "seat", 0, "", 0 },
                { "seat", "seat", 0, "", 0 },
                { "&&seat=x&&", "seat", 0, "x", 0 },
                /* absent, twice, malformed, too long */
                { "seats=x", "seat", -ENOENT, NULL, 0 },
                { "", "seat", -ENOENT, NULL, 0 },
                { "seat=a&seat=b", "seat", -ENOTUNIQ, NULL, 0 },
                { "seat=%zz", "seat", -EBADMSG, NULL, 0 },
                { "seat=%4", "seat", -EBADMSG, NULL, 0 },
                { "seat=%", "seat", -EBADMSG, NULL, 0 },
                { "seat=a%00b", "seat", -EBADMSG, NULL, 0 },
                { "seat=a%0ab", "seat", -EBADMSG, NULL, 0 },
                { "=x&seat=a", "seat", -EBADMSG, NULL, 0 },
                { "other=%zz&seat=a", "seat", -EBADMSG, NULL, 0 },
                { "seat=abcdef", "seat", -E2BIG, .size = 4 },
        };
        unit_check_str_cases(form, cases, ELEMENTSOF(cases), 80);
        char v[80];
        char big[WEB_FORM_MAX + 10];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        memcpy(big, "seat=", 5);
        assert_int_equal(form(big, "seat", v, sizeof(v)), -EBADMSG);
}

static int cookie(const char *h, const char *name, char *out, size_t size) {
        return web_cookie_get(h, strlen(h), name, out, size);
}

TEST(cookie) {
        static const UnitStrCase cases[] = {
                { "__Host-seatweb=abc", "__Host-seatweb", 0, "abc", 0 },
                { "a=1; __Host-seatweb=xyz;b=2", "__Host-seatweb", 0, "xyz", 0 },
                { "a=\"q\"", "a", 0, "q", 0 },
                { "a=1; ;  b=2 ", "b", 0, "2", 0 },
                { "a=1", "b", -ENOENT, NULL, 0 },
                { "", "b", -ENOENT, NULL, 0 },
                { "b=1; b=2", "b", -ENOTUNIQ, NULL, 0 },
                { "b=1;b=1", "b", -ENOTUNIQ, NULL, 0 },
                { "b", "b", -EBADMSG, NULL, 0 },
                { "=1", "b", -EBADMSG, NULL, 0 },
                { "b=a,b", "b", -EBADMSG, NULL, 0 },
                { "b=a\\b", "b", -EBADMSG, NULL, 0 },
                { "b=a b", "b", -EBADMSG, NULL, 0 },
                { "b=abcdef", "b", -E2BIG, .size = 4 },
                { "x y=1; b=2", "b", -EBADMSG, NULL, 0 },
        };
        unit_check_str_cases(cookie, cases, ELEMENTSOF(cases), 64);
}

static int bearer(const char *h, const char *unused, char *out, size_t size) {
        (void) unused;
        return web_bearer_get(h, strlen(h), out, size);
}

TEST(bearer) {
        static const UnitStrCase cases[] = {
                { "Bearer abc", NULL, 0, "abc", 0 },
                { "bearer   a-b._~+/c==  ", NULL, 0, "a-b._~+/c==", 0 },
                { "Basic YTpi", NULL, -ENOENT, NULL, 0 },
                { "BearerX abc", NULL, -ENOENT, NULL, 0 },
                { "", NULL, -ENOENT, NULL, 0 },
                { "Bearer", NULL, -EBADMSG, NULL, 0 },
                { "Bearer ", NULL, -EBADMSG, NULL, 0 },
                { "Bearer a b", NULL, -EBADMSG, NULL, 0 },
                { "Bearer a,b", NULL, -EBADMSG, NULL, 0 },
                { "Bearer a=b", NULL, -EBADMSG, NULL, 0 },
                { "Bearer \"abc\"", NULL, -EBADMSG, NULL, 0 },
                { "Bearer abcdef", NULL, -E2BIG, .size = 4 },
        };
        unit_check_str_cases(bearer, cases, ELEMENTSOF(cases), WEB_TOKEN_HEX + 2);
        char v[WEB_TOKEN_HEX + 2];
        assert_int_equal(web_bearer_get("Bearer ab\0c", 11, v, sizeof(v)), -EBADMSG);
}

TEST(ids) {
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
TEST(file_query) {
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

TEST(routes) {
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

TEST_MAIN("web-parse")
