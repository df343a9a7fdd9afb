/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/error.h"
#include "common/log.h"

TEST(error_set_and_wrap) {
        _cleanup_error_ SeatError *e = NULL;

        assert_int_equal(seat_error_set(&e, ENOSPC, "create overlay '%s'", "/x"), -ENOSPC);
        assert_int_equal(e->code, ENOSPC);
        assert_string_equal(e->message, "create overlay '/x'");
        /* The first error wins: a later set does not overwrite it. */
        assert_int_equal(seat_error_set(&e, EIO, "other"), -EIO);
        assert_string_equal(e->message, "create overlay '/x'");
        assert_int_equal(seat_error_wrap(&e, "provision seat '%s'", "s1"), -ENOSPC);
        assert_string_equal(e->message, "provision seat 's1': create overlay '/x'");
        /* NULL is allowed everywhere. */
        assert_int_equal(seat_error_set(NULL, EPERM, "x"), -EPERM);
        assert_int_equal(seat_error_wrap(NULL, "x"), -EIO);
}

TEST(log_escape) {
        _cleanup_free_ char *a = log_escape("plain text", 10, 100);
        assert_string_equal(a, "plain text");
        _cleanup_free_ char *b = log_escape("\x1b[31mred\n\"q\"\\", 13, 100);
        assert_string_equal(b, "\\x1b[31mred\\x0a\\\"q\\\"\\\\");
        _cleanup_free_ char *c = log_escape("abcdefghij", 10, 4);
        assert_string_equal(c, "abcd...");
        _cleanup_free_ char *d = log_escape("\xff\xfe", 2, 5);
        assert_string_equal(d, "\\xff...");
        _cleanup_free_ char *e = log_escape("a\0b", 3, 100);
        assert_string_equal(e, "a\\x00b");
}

TEST(log_returns_errno) {
        log_set_max_level(LOG_LEVEL_ERR);
        assert_int_equal(log_debug_errno(EINVAL, "not shown"), -EINVAL);
        assert_int_equal(log_debug_errno(-EINVAL, "not shown"), -EINVAL);
        assert_int_equal(log_debug("x"), 0);
}

TEST_MAIN("error-log")
