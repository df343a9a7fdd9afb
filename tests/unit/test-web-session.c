/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's sessions and login rate limits: bounded tables that fail closed; only failed
 * logins cost. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "login-limit.h"
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
                assert_true(rate_limit_take(r, "10.0.0.1", 1, 0));
        assert_false(rate_limit_take(r, "10.0.0.1", 1, 0));
        /* 6 a minute: one more after 10 s. */
        assert_true(rate_limit_take(r, "10.0.0.1", 1, 10000));
        assert_false(rate_limit_take(r, "10.0.0.1", 1, 10001));
        assert_true(rate_limit_take(r, "10.0.0.2", 1, 10001));
        assert_true(rate_limit_take(r, "10.0.0.3", 1, 10001));
        /* The table is full of keys still limited: a new key is refused, not let in by
         * forgetting one. */
        assert_false(rate_limit_take(r, "10.0.0.4", 1, 10002));
        /* Once a bucket has filled up again its slot is free. */
        assert_true(rate_limit_take(r, "10.0.0.4", 1, 10001 + 60000));
        char longkey[RATE_KEY_MAX + 1];
        memset(longkey, 'k', RATE_KEY_MAX);
        longkey[RATE_KEY_MAX] = '\0';
        assert_false(rate_limit_take(r, longkey, 1, 0));
        assert_null(rate_limit_new(0, 3));
}

TEST(rate_limit_whole_and_give_back) {
        _cleanup_(rate_limit_freep) RateLimit *r = rate_limit_new(3, 4);
        assert_non_null(r);
        /* A whole bucket: only a full one has it, and then it is empty. */
        assert_true(rate_limit_take(r, "a", 1, 0));
        assert_false(rate_limit_take(r, "a", RATE_WHOLE, 0));
        rate_limit_give_back(r, "a", 1, 0);
        assert_true(rate_limit_take(r, "a", RATE_WHOLE, 0));
        assert_false(rate_limit_take(r, "a", 1, 0));
        /* Given back up to a full bucket, never more. */
        rate_limit_give_back(r, "a", RATE_WHOLE, 0);
        rate_limit_give_back(r, "a", 5, 0);
        for (int i = 0; i < 3; i++)
                assert_true(rate_limit_take(r, "a", 1, 0));
        assert_false(rate_limit_take(r, "a", 1, 0));
        /* A key not held: nothing to give back, and no slot taken for it. */
        rate_limit_give_back(r, "never", 1, 0);
        /* n above the bucket's size is the whole bucket. */
        assert_true(rate_limit_take(r, "b", 1000, 0));
        assert_false(rate_limit_take(r, "b", 1, 0));
        /* 3 a minute: the whole bucket again after 60 s, not before. */
        assert_false(rate_limit_take(r, "b", RATE_WHOLE, 59999));
        assert_true(rate_limit_take(r, "b", RATE_WHOLE, 59999 + 60000));
}

/* One login: charged, then settled as it turned out. */
static int attempt(RateLimit *per_address, RateLimit *per_seat, LoginSecret secret, const char *address,
                   const char *seat, bool fails, int64_t now) {
        LoginCharge ch = {};
        int r = login_limit_take(per_address, per_seat, secret, address, seat, now, &ch);
        if (r == 0)
                login_limit_settle(&ch, fails, now);
        return r;
}

TEST(login_limit_failures_only) {
        _cleanup_(rate_limit_freep) RateLimit *addr = rate_limit_new(3, 16), *seat = rate_limit_new(4, 16);
        assert_non_null(addr);
        assert_non_null(seat);
        /* Ten successes in a row from one address, on one seat: none refused. */
        for (int i = 0; i < 10; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.1", "s1", false, 0), 0);
        /* Failures cost: three, then refused for the address (whichever seat). */
        for (int i = 0; i < 3; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.2", "s2", true, 0), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.2", "s1", false, 0), -EAGAIN);
        /* Attempts still running count: a burst is refused at once, and given back after. */
        LoginCharge ch[4] = {};
        for (int i = 0; i < 3; i++)
                assert_int_equal(login_limit_take(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s1", 0, &ch[i]), 0);
        assert_int_equal(login_limit_take(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s1", 0, &ch[3]), -EAGAIN);
        for (int i = 0; i < 3; i++)
                login_limit_settle(&ch[i], false, 0);
        /* settled twice: nothing more given back (the bucket holds 3, not 6) */
        login_limit_settle(&ch[0], false, 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s3", true, 0), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s3", false, 0), -EAGAIN);
}

TEST(login_limit_seat_emptied_from_elsewhere) {
        _cleanup_(rate_limit_freep) RateLimit *addr = rate_limit_new(3, 16), *seat = rate_limit_new(4, 16);
        assert_non_null(addr);
        assert_non_null(seat);
        /* Two addresses empty seat s1's bucket with wrong tokens. */
        for (int i = 0; i < 2; i++) {
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.1", "s1", true, 0), 0);
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.2", "s1", true, 0), 0);
        }
        /* An address that failed lately: refused for the seat, not for others. */
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.1", "s1", true, 0), -EBUSY);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.1", "s2", false, 0), 0);
        /* The participant, from an address with a full bucket, stakes it and gets in... */
        LoginCharge ch = {};
        assert_int_equal(login_limit_take(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s1", 0, &ch), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s2", false, 0), -EAGAIN); /* staked */
        login_limit_settle(&ch, false, 0);
        /* ...and gets it all back: again, and three failures elsewhere after that. */
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s1", false, 0), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.3", "s2", true, 0), 0);
        /* A wrong token staked: the address is left with nothing... */
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.4", "s1", true, 0), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.4", "s2", false, 0), -EAGAIN);
        /* ...a login after 20 s (3 a minute), but no new try on an emptied seat until
         * its own bucket is full again (s1, refilling at 4 a minute, is emptied again). */
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.5", "s1", true, 20000), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.4", "s1", false, 21000), -EBUSY);
        assert_int_equal(attempt(addr, seat, LOGIN_TOKEN, "10.0.0.4", "s2", false, 21000), 0);
        /* A password gets no such pass: the name's bucket decides. */
        for (int i = 0; i < 4; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_PASSWORD, i % 2 ? "10.0.1.1" : "10.0.1.2", "fac:bob", true, 0), 0);
        assert_int_equal(attempt(addr, seat, LOGIN_PASSWORD, "10.0.1.3", "fac:bob", false, 0), -EBUSY);
        /* Refused attempts cost nothing: 10.0.1.3 still has its three. */
        for (int i = 0; i < 3; i++)
                assert_int_equal(attempt(addr, seat, LOGIN_PASSWORD, "10.0.1.3", "fac:alice", true, 0), 0);
}

TEST_MAIN("web-session")
