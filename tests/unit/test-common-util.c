/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The small helpers of common/ that several components took over from their own copies:
 * strprintf(), sockaddr_from_ip(), log_level_from_string() and its _syslog() variant, the fd flag setters. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/decimal.h"
#include "common/fileio.h"
#include "common/list.h"
#include "common/log.h"
#include "common/macro.h"
#include "common/sockaddr.h"
#include "common/strprintf.h"

TEST(strprintf) {
        _cleanup_free_ char *s = strprintf("%s-%d", "seat", 7);
        assert_non_null(s);
        assert_string_equal(s, "seat-7");
        _cleanup_free_ char *empty = strprintf("%s", "");
        assert_non_null(empty);
        assert_string_equal(empty, "");
}

TEST(decimal_parse) {
        uint64_t v = 0;
        assert_int_equal(decimal_parse("65535", 5, 5, &v), 0);
        assert_int_equal(v, 65535);
        assert_int_equal(decimal_parse("0080x", 4, 5, &v), 0); /* n bytes only; leading zeros are the caller's */
        assert_int_equal(v, 80);
        assert_int_equal(decimal_parse("9999999999999999999", 19, 19, &v), 0);
        assert_true(v == UINT64_C(9999999999999999999));
        assert_int_equal(decimal_parse("", 0, 5, &v), -EINVAL);
        assert_int_equal(decimal_parse("123456", 6, 5, &v), -EINVAL);
        assert_int_equal(decimal_parse("18446744073709551616", 20, 20, &v), -EINVAL); /* 20 digits never */
        assert_int_equal(decimal_parse("+1", 2, 5, &v), -EINVAL);
        assert_int_equal(decimal_parse("1 ", 2, 5, &v), -EINVAL);
        assert_int_equal(decimal_parse("-1", 2, 5, &v), -EINVAL);
        assert_int_equal(v, UINT64_C(9999999999999999999)); /* untouched on failure */
}

TEST(sockaddr_from_ip) {
        struct sockaddr_storage sa;
        socklen_t len = 0;
        char text[INET6_ADDRSTRLEN];

        assert_int_equal(sockaddr_from_ip("127.0.0.1", 53, &sa, &len), 0);
        const struct sockaddr_in *in4 = (const struct sockaddr_in *) &sa;
        assert_int_equal(sa.ss_family, AF_INET);
        assert_int_equal(len, sizeof(*in4));
        assert_int_equal(ntohs(in4->sin_port), 53);
        assert_non_null(inet_ntop(AF_INET, &in4->sin_addr, text, sizeof(text)));
        assert_string_equal(text, "127.0.0.1");

        assert_int_equal(sockaddr_from_ip("fd00::1", 8080, &sa, &len), 0);
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *) &sa;
        assert_int_equal(sa.ss_family, AF_INET6);
        assert_int_equal(len, sizeof(*in6));
        assert_int_equal(ntohs(in6->sin6_port), 8080);
        assert_int_equal(in6->sin6_scope_id, 0); /* zeroed, not left over */
        assert_non_null(inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text)));
        assert_string_equal(text, "fd00::1");

        /* Addresses only: no names, no brackets, no ports. */
        assert_int_equal(sockaddr_from_ip("localhost", 1, &sa, &len), -EINVAL);
        assert_int_equal(sockaddr_from_ip("[::1]", 1, &sa, &len), -EINVAL);
        assert_int_equal(sockaddr_from_ip("127.0.0.1:53", 1, &sa, &len), -EINVAL);
        assert_int_equal(sockaddr_from_ip("", 1, &sa, &len), -EINVAL);
}

TEST(log_level_from_string) {
        static const struct {
                const char *word;
                LogLevel level;
        } ok[] = {
                { "error", LOG_LEVEL_ERR },   { "warning", LOG_LEVEL_WARNING }, { "notice", LOG_LEVEL_NOTICE },
                { "info", LOG_LEVEL_INFO },   { "debug", LOG_LEVEL_DEBUG },
        };
        LogLevel l;
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                l = LOG_LEVEL_ERR;
                assert_int_equal(log_level_from_string(ok[i].word, &l), 0);
                assert_int_equal(l, ok[i].level);
        }
        /* The words seatd always refused stay refused ("err" is guest-init's alone). */
        l = LOG_LEVEL_INFO;
        assert_int_equal(log_level_from_string("err", &l), -EINVAL);
        assert_int_equal(log_level_from_string("DEBUG", &l), -EINVAL);
        assert_int_equal(log_level_from_string("", &l), -EINVAL);
        assert_int_equal(l, LOG_LEVEL_INFO);
}

TEST(log_level_from_string_syslog) {
        LogLevel l = LOG_LEVEL_INFO;
        assert_int_equal(log_level_from_string_syslog("err", &l), 0);
        assert_int_equal(l, LOG_LEVEL_ERR);
        assert_int_equal(log_level_from_string_syslog("debug", &l), 0);
        assert_int_equal(l, LOG_LEVEL_DEBUG);
        assert_int_equal(log_level_from_string_syslog("error", &l), 0);
        assert_int_equal(l, LOG_LEVEL_ERR);
        l = LOG_LEVEL_INFO;
        assert_int_equal(log_level_from_string_syslog("ERR", &l), -EINVAL);
        assert_int_equal(log_level_from_string_syslog("", &l), -EINVAL);
        assert_int_equal(l, LOG_LEVEL_INFO);
}

TEST(fd_flags) {
        int p[2];
        assert_int_equal(pipe2(p, 0), 0);

        assert_int_equal(fd_set_nonblock(p[0], true), 0);
        assert_true(fcntl(p[0], F_GETFL) & O_NONBLOCK);
        assert_int_equal(fd_set_nonblock(p[0], true), 0); /* already: nothing to do */
        assert_int_equal(fd_set_nonblock(p[0], false), 0);
        assert_false(fcntl(p[0], F_GETFL) & O_NONBLOCK);

        assert_int_equal(fd_set_cloexec(p[1], true), 0);
        assert_true(fcntl(p[1], F_GETFD) & FD_CLOEXEC);
        assert_false(fcntl(p[1], F_GETFL) & O_NONBLOCK); /* the other kind of flag untouched */
        assert_int_equal(fd_set_cloexec(p[1], false), 0);
        assert_false(fcntl(p[1], F_GETFD) & FD_CLOEXEC);

        safe_close(p[0]);
        safe_close(p[1]);
        assert_int_equal(fd_set_nonblock(p[0], true), -EBADF);
        assert_int_equal(fd_set_cloexec(p[1], true), -EBADF);
}

/* common/list.h: an item on two lists at once (its own pointer pairs), removed from the
 * head, the middle and the end, the pointers of the rest kept whole both ways. */
typedef struct Item {
        int id;
        struct Item *next, *prev;
        struct Item *b_next, *b_prev;
} Item;

static void check_list(Item *head, const char *want) {
        char got[16] = "";
        size_t n = 0;
        for (Item *i = head, *prev = NULL; i; prev = i, i = i->next) {
                assert_ptr_equal(i->prev, prev);
                got[n++] = (char) ('0' + i->id);
        }
        assert_string_equal(got, want);
}

TEST(list) {
        Item it[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
        Item *head = NULL, *b = NULL;
        for (int i = 0; i < 4; i++)
                LIST_PREPEND(next, prev, head, &it[i]);
        LIST_PREPEND(b_next, b_prev, b, &it[2]);
        check_list(head, "3210");
        LIST_REMOVE(next, prev, head, &it[2]); /* the middle */
        check_list(head, "310");
        LIST_REMOVE(next, prev, head, &it[3]); /* the head */
        check_list(head, "10");
        LIST_REMOVE(next, prev, head, &it[0]); /* the end */
        check_list(head, "1");
        LIST_REMOVE(next, prev, head, &it[1]);
        assert_null(head);
        /* the other list did not move */
        assert_ptr_equal(b, &it[2]);
        assert_null(it[2].b_next);
        assert_null(it[2].b_prev);
}

TEST(strv_contains) {
        char *const l[] = { (char *) "guest", (char *) "capture", (char *) "", NULL };
        assert_true(strv_contains(l, "guest"));
        assert_true(strv_contains(l, "capture"));
        assert_true(strv_contains(l, "")); /* an empty string is a member like any other */
        assert_false(strv_contains(l, "Guest")); /* exact, case and all */
        assert_false(strv_contains(l, "gues"));
        assert_false(strv_contains(l, "guests"));
        char *const empty[] = { NULL };
        assert_false(strv_contains(empty, "guest"));
        assert_false(strv_contains(NULL, "guest")); /* NULL: no list, holds nothing */
}

TEST_MAIN("common-util")
