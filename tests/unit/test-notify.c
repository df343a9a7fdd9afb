/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd's sd_notify: a datagram with the state to $NOTIFY_SOCKET, a path or '@'abstract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "../lib/seat-test.h"

#include "common/macro.h"
#include "seatd/notify.h"

/* A datagram socket bound to name (a path, or '@' for the abstract namespace), as systemd
 * makes it; returns its fd. */
static int listen_at(const char *name) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(name);
        assert_true(len < sizeof(sa.sun_path));
        memcpy(sa.sun_path, name, len);
        if (name[0] == '@')
                sa.sun_path[0] = '\0';
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len)), 0);
        return fd;
}

static void expect_datagram(int fd, const char *want) {
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        assert_true(n >= 0);
        buf[n] = '\0';
        assert_string_equal(buf, want);
}

TEST(path_socket) {
        char dir[] = "/tmp/test-notify.XXXXXX", path[sizeof(dir) + 16];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/notify", dir);
        _cleanup_close_ int fd = listen_at(path);

        assert_int_equal(setenv("NOTIFY_SOCKET", path, 1), 0);
        assert_int_equal(notify_send("READY=1"), 1);
        expect_datagram(fd, "READY=1");
        assert_int_equal(notify_send("STOPPING=1"), 1);
        expect_datagram(fd, "STOPPING=1");
        /* Left set, as sd_notify(0, ...) leaves it. */
        assert_string_equal(getenv("NOTIFY_SOCKET"), path);

        (void) unlink(path);
        (void) rmdir(dir);
}

TEST(abstract_socket) {
        char name[64];
        snprintf(name, sizeof(name), "@seatd-test-notify-%d", (int) getpid());
        _cleanup_close_ int fd = listen_at(name);

        assert_int_equal(setenv("NOTIFY_SOCKET", name, 1), 0);
        assert_int_equal(notify_send("READY=1"), 1);
        expect_datagram(fd, "READY=1");
}

TEST(not_asked) {
        assert_int_equal(unsetenv("NOTIFY_SOCKET"), 0);
        assert_int_equal(notify_send("READY=1"), 0);
        assert_int_equal(setenv("NOTIFY_SOCKET", "", 1), 0);
        assert_int_equal(notify_send("READY=1"), 0);
}

TEST(bad_addresses) {
        char longname[200];
        memset(longname, 'x', sizeof(longname) - 1);
        longname[0] = '/';
        longname[sizeof(longname) - 1] = '\0';

        assert_int_equal(setenv("NOTIFY_SOCKET", "relative/path", 1), 0);
        assert_int_equal(notify_send("READY=1"), -EAFNOSUPPORT);
        assert_int_equal(setenv("NOTIFY_SOCKET", longname, 1), 0);
        assert_int_equal(notify_send("READY=1"), -ENAMETOOLONG);
        /* Nobody listens there: the error comes back, nothing hangs. */
        assert_int_equal(setenv("NOTIFY_SOCKET", "/nonexistent/notify", 1), 0);
        assert_int_equal(notify_send("READY=1"), -ENOENT);
        (void) unsetenv("NOTIFY_SOCKET");
}

TEST_MAIN("notify")
