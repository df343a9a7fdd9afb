/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/macro.h"
#include "unit-source.h"

static char dir[] = "/tmp/seatd-test-fileio-XXXXXX";

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        return unit_remove_tree(dir);
}

TEST(atomic_write_and_read) {
        _cleanup_free_ char *path = NULL, *data = NULL;
        struct stat st;
        size_t n;

        assert_true(asprintf(&path, "%s/a", dir) > 0);
        assert_int_equal(write_file_atomic(path, "hello", 5, 0600), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(read_file_capped(path, 100, &data, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(data, "hello");
        freep(&data);

        /* Replacing keeps the file whole, and leaves no temp file behind. */
        assert_int_equal(write_file_atomic(path, "bye", 3, 0644), 0);
        assert_int_equal(read_file_capped(path, 100, &data, &n), 0);
        assert_string_equal(data, "bye");
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "test $(ls -A '%s' | wc -l) -eq 1", dir);
        assert_int_equal(system(cmd), 0);
}

TEST(read_cap) {
        _cleanup_free_ char *path = NULL;
        char *data = NULL;
        size_t n;

        assert_true(asprintf(&path, "%s/big", dir) > 0);
        assert_int_equal(write_file_atomic(path, "0123456789", 10, 0644), 0);
        assert_int_equal(read_file_capped(path, 9, &data, &n), -EFBIG);
        assert_null(data);
        assert_int_equal(read_file_capped("/proc/self", 9, &data, &n), -EBADFD);
        assert_int_equal(read_file_capped("/nonexistent/x", 9, &data, &n), -ENOENT);
        /* A FIFO is refused at once, not waited on (no writer ever comes). */
        _cleanup_free_ char *fifo = NULL;
        assert_true(asprintf(&fifo, "%s/fifo", dir) > 0);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        assert_int_equal(read_file_capped(fifo, 9, &data, &n), -EBADFD);
        assert_int_equal(unlink(fifo), 0);
}

/* A temporary file left by a crashed run under the name an earlier version used (PATH.tmp.PID,
 * PIDs come again after a restart) does not stop the write: the temporary names are new
 * each time, and hidden. */
TEST(atomic_write_ignores_a_stale_temporary) {
        _cleanup_free_ char *path = NULL, *stale = NULL;
        char *data = NULL;
        size_t n;
        assert_true(asprintf(&path, "%s/rec", dir) > 0);
        assert_true(asprintf(&stale, "%s.tmp.%d", path, (int) getpid()) > 0);
        assert_int_equal(write_file_atomic(stale, "old", 3, 0600), 0);
        assert_int_equal(write_file_atomic(path, "new", 3, 0644), 0);
        assert_int_equal(read_file_capped(path, 100, &data, &n), 0);
        assert_string_equal(data, "new");
        freep(&data);
        assert_int_equal(unlink(stale), 0);
        assert_int_equal(unlink(path), 0);
}

TEST(atomic_write_failure_leaves_nothing) {
        assert_true(write_file_atomic("/nonexistent-dir/x", "a", 1, 0644) < 0);
}

TEST(clocks) {
        int64_t a = now_monotonic_ms(), b = now_monotonic_ms();
        assert_true(a > 0 && b >= a);
        assert_true(now_boottime_ms() > 0);
        assert_true(now_realtime_ms() > 1600000000000LL);
}

/* remove_tree_at(): no deeper than asked, links removed and never followed. */
TEST(remove_tree) {
        char p[256], keep[256];
        snprintf(keep, sizeof(keep), "%s/outside", dir);
        assert_int_equal(write_file_atomic(keep, "x", 1, 0644), 0);
        snprintf(p, sizeof(p), "%s/t", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/t/a", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/t/a/b", dir);
        assert_int_equal(mkdir(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/t/a/b/f", dir);
        assert_int_equal(write_file_atomic(p, "x", 1, 0644), 0);
        snprintf(p, sizeof(p), "%s/t/link", dir);
        assert_int_equal(symlink(dir, p), 0);
        snprintf(p, sizeof(p), "%s/t", dir);
        assert_int_equal(remove_tree_at(AT_FDCWD, p, 1), -EISDIR); /* t/a/b is two levels down */
        assert_int_equal(remove_tree_at(AT_FDCWD, p, 2), 0);
        assert_int_equal(access(p, F_OK), -1);
        assert_int_equal(access(keep, F_OK), 0);
        assert_int_equal(remove_tree_at(AT_FDCWD, p, 2), 0); /* gone already */
}

TEST_MAIN_FIXTURE("fileio", setup, teardown)
