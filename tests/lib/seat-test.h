/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One line registers a cmocka test, as systemd's TEST() does (src/shared/tests.h):
 *
 *         TEST(roundtrip) { ... }               static void test_roundtrip(void **state)
 *         TEST_FIXTURE(io, setup, teardown) { } the same, with cmocka's per-test fixtures
 *         TEST_MAIN("base64")                   main(): every test of this file, in the
 *                                               order they stand in it
 *         TEST_MAIN_FIXTURE("archive", setup, teardown)   with group fixtures
 *
 * Why: a hand-kept table in main() let a written test go unregistered (it then never ran
 * and nothing said so), and 40 near-identical main()s were the bulk of the tree's repeated
 * code. Each TEST() puts an entry into the ELF section "seat_tests"; the linker's
 * __start_/__stop_ symbols bound it. Neither GCC's nor clang's ASan pads globals placed in
 * a named section, so the entries stay an array under the sanitizers too. The entries are
 * sorted by line before they run because a compiler need not emit them in source order.
 *
 * Include it instead of <cmocka.h> and the headers cmocka needs before it. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

typedef struct SeatTest {
        struct CMUnitTest test;
        unsigned line;
} SeatTest;

#define SEAT_TEST_ENTRY_(id, setup_fn, teardown_fn)                                          \
        static void test_##id(void **state);                                                 \
        static const SeatTest seat_test_entry_##id                                          \
                __attribute__((used, section("seat_tests"), aligned(__alignof__(SeatTest)))) = { \
                        .test = { .name = "test_" #id, .test_func = test_##id,                \
                                  .setup_func = (setup_fn), .teardown_func = (teardown_fn) }, \
                        .line = __LINE__,                                                    \
                };                                                                           \
        static void test_##id(__attribute__((unused)) void **state)

#define TEST(id) SEAT_TEST_ENTRY_(id, NULL, NULL)
#define TEST_FIXTURE(id, setup_fn, teardown_fn) SEAT_TEST_ENTRY_(id, setup_fn, teardown_fn)

extern const SeatTest __start_seat_tests[] __attribute__((weak));
extern const SeatTest __stop_seat_tests[] __attribute__((weak));

static int seat_test_by_line_(const void *a, const void *b) {
        unsigned x = ((const SeatTest *) a)->line, y = ((const SeatTest *) b)->line;
        return (x > y) - (x < y);
}

/* Runs every registered test of this executable as one cmocka group (one TAP plan). A
 * file with no TEST() is an error, not an empty pass. */
static inline int seat_tests_run(const char *group, CMFixtureFunction setup, CMFixtureFunction teardown) {
        size_t n = (size_t) (__stop_seat_tests - __start_seat_tests);
        if (!__start_seat_tests || n == 0) {
                print_error("%s: no TEST() registered\n", group);
                return 1;
        }
        SeatTest *sorted = calloc(n, sizeof(*sorted));
        struct CMUnitTest *tests = calloc(n, sizeof(*tests));
        if (!sorted || !tests) {
                free(sorted);
                free(tests);
                print_error("%s: out of memory\n", group);
                return 1;
        }
        memcpy(sorted, __start_seat_tests, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), seat_test_by_line_);
        for (size_t i = 0; i < n; i++)
                tests[i] = sorted[i].test;
        free(sorted);
        int r = _cmocka_run_group_tests(group, tests, n, setup, teardown);
        free(tests);
        return r;
}

#define TEST_MAIN_FIXTURE(group, setup_fn, teardown_fn) \
        int main(void) {                                \
                return seat_tests_run(group, setup_fn, teardown_fn); \
        }
#define TEST_MAIN(group) TEST_MAIN_FIXTURE(group, NULL, NULL)
