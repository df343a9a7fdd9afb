/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's sessions and login rate limits: bounded tables that fail closed. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "ratelimit.h"
#include "session.h"

#define TOKEN_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

TEST(sessions) {
        _cleanup_(session_table_freep) SessionTable *t = session_table_new(2, 1000, 5000);
        char id1[WEB_SESSION_ID_LEN + 1], id2[WEB_SESSION_ID_LEN + 1], id3[WEB_SESSION_ID_LEN + 1];
        assert_non_null(t);
        assert_int_equal(session_open(t, "s1", TOKEN_A, 0, id1), 0);
        assert_true(web_session_id_valid(id1));
        assert_int_equal(session_open(t, "s2", TOKEN_A, 10, id2), 0);
        assert_string_not_equal(id1, id2);
        WebSession *s = session_find(t, id1, 500);
        assert_non_null(s);
        assert_string_equal(s->seat, "s1");
        assert_string_equal(s->token, TOKEN_A);
        /* Full: the longest idle (s2, last used at 10) makes room. */
        assert_int_equal(session_open(t, "s3", TOKEN_A, 600, id3), 0);
        assert_null(session_find(t, id2, 600));
        assert_non_null(session_find(t, id1, 600));
        /* Idle timeout, then the maximum age however busy. */
        assert_null(session_find(t, id3, 1700));
        for (int64_t now = 1000; now <= 5000; now += 500)
                assert_non_null(session_find(t, id1, now));
        assert_null(session_find(t, id1, 5500));
        /* Bad input opens nothing. */
        assert_int_equal(session_open(t, "S!", TOKEN_A, 0, id1), -EINVAL);
        assert_int_equal(session_open(t, "s1", "short", 0, id1), -EINVAL);
        assert_null(session_find(t, "nope", 0));
        assert_int_equal(session_open(t, "s1", TOKEN_A, 6000, id1), 0);
        WebSession *c = session_find(t, id1, 6000);
        session_close(t, c);
        assert_null(session_find(t, id1, 6000));
}

TEST(rate_limit) {
        _cleanup_(rate_limit_freep) RateLimit *r = rate_limit_new(6, 3);
        assert_non_null(r);
        for (int i = 0; i < 6; i++)
                assert_true(rate_limit_take(r, "10.0.0.1", 0));
        assert_false(rate_limit_take(r, "10.0.0.1", 0));
        /* 6 a minute: one more after 10 s. */
        assert_true(rate_limit_take(r, "10.0.0.1", 10000));
        assert_false(rate_limit_take(r, "10.0.0.1", 10001));
        assert_true(rate_limit_take(r, "10.0.0.2", 10001));
        assert_true(rate_limit_take(r, "10.0.0.3", 10001));
        /* The table is full of keys still limited: a new key is refused, not let in by
         * forgetting one. */
        assert_false(rate_limit_take(r, "10.0.0.4", 10002));
        /* Once a bucket has filled up again its slot is free. */
        assert_true(rate_limit_take(r, "10.0.0.4", 10001 + 60000));
        char longkey[RATE_KEY_MAX + 1];
        memset(longkey, 'k', RATE_KEY_MAX);
        longkey[RATE_KEY_MAX] = '\0';
        assert_false(rate_limit_take(r, longkey, 0));
        assert_null(rate_limit_new(0, 3));
}

TEST_MAIN("web-session")
