/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log lines on journald's stream carry their priority as "<N>"; elsewhere they do not. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "../lib/seat-test.h"

#include "common/log.h"

typedef struct Pipe {
        int fd[2];
} Pipe;

static int pipe_setup(void **state) {
        Pipe *p = calloc(1, sizeof(*p));
        assert_non_null(p);
        assert_int_equal(pipe2(p->fd, O_CLOEXEC | O_NONBLOCK), 0);
        log_set_ident("test");
        log_set_max_level(LOG_LEVEL_DEBUG);
        *state = p;
        return 0;
}

static int pipe_teardown(void **state) {
        Pipe *p = *state;
        log_set_fd(STDERR_FILENO);
        (void) unsetenv("JOURNAL_STREAM");
        safe_close(p->fd[0]);
        safe_close(p->fd[1]);
        free(p);
        return 0;
}

/* Sets $JOURNAL_STREAM to fd's device and inode, as systemd does for a service's stderr. */
static void set_journal_stream(int fd) {
        struct stat st;
        char v[64];
        assert_int_equal(fstat(fd, &st), 0);
        snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long) st.st_dev, (unsigned long long) st.st_ino);
        assert_int_equal(setenv("JOURNAL_STREAM", v, 1), 0);
}

/* What the logger wrote into the pipe since the last call. */
static const char *drain(Pipe *p) {
        static char buf[4096];
        ssize_t n = read(p->fd[0], buf, sizeof(buf) - 1);
        buf[n > 0 ? n : 0] = '\0';
        return buf;
}

TEST_FIXTURE(prefix_on_journal_stream, pipe_setup, pipe_teardown) {
        Pipe *p = *state;
        set_journal_stream(p->fd[1]);
        log_set_fd(p->fd[1]); /* looks at the variable again */

        log_error("e %d", 1);
        assert_string_equal(drain(p), "<3>test: e 1\n");
        log_warning("w");
        assert_string_equal(drain(p), "<4>test: w\n");
        log_notice("n");
        assert_string_equal(drain(p), "<5>test: n\n");
        log_info("i");
        assert_string_equal(drain(p), "<6>test: i\n");
        log_debug("d");
        assert_string_equal(drain(p), "<7>test: d\n");
        /* The check must not clobber the errno that %m prints. */
        log_error_errno(ENOENT, "open: %m");
        assert_string_equal(drain(p), "<3>test: open: No such file or directory\n");
}

TEST_FIXTURE(no_prefix_without_journal_stream, pipe_setup, pipe_teardown) {
        Pipe *p = *state;
        assert_int_equal(unsetenv("JOURNAL_STREAM"), 0);
        log_set_fd(p->fd[1]);

        log_info("i");
        assert_string_equal(drain(p), "test: info: i\n");
        log_error("e");
        assert_string_equal(drain(p), "test: error: e\n");
}

/* Inherited by a child whose stderr went elsewhere: the variable alone is not enough. */
TEST_FIXTURE(no_prefix_when_stream_differs, pipe_setup, pipe_teardown) {
        Pipe *p = *state;
        int other[2];
        assert_int_equal(pipe2(other, O_CLOEXEC), 0); /* a pipe's two ends share an inode */
        set_journal_stream(other[1]);
        log_set_fd(p->fd[1]);
        log_info("i");
        assert_string_equal(drain(p), "test: info: i\n");
        safe_close(other[0]);
        safe_close(other[1]);

        static const char *const bad[] = { "", "1", "1:", ":1", "1:2x", "x:y" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(setenv("JOURNAL_STREAM", bad[i], 1), 0);
                log_set_fd(p->fd[1]);
                log_warning("w");
                assert_string_equal(drain(p), "test: warning: w\n");
        }
}

TEST_MAIN("log")
