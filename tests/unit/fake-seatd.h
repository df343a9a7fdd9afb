/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pieces of a scripted seatd that seat-web's unit tests share (test-web-terminal,
 * -forward-link, -ws-forward, -fac-events): a Unix socket to listen on, a line read one
 * byte at a time (so nothing past it is taken from the client), a line written with
 * send(MSG_NOSIGNAL) (the client may be gone: the test sees that, not a SIGPIPE), and the
 * data event of a forwarded stream (its wire format is seatd's, not the script's). Each
 * test keeps its own script: what seatd says is what it tests.
 */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/fileio.h"
#include "common/macro.h"

#define FAKE_SEATD_PATH_MAX 108

/* One line without its '\n' into buf; its length, or -1 at the end or past size. */
static inline int fake_read_line(int fd, char *buf, size_t size) {
        size_t n = 0;
        while (n + 1 < size) {
                ssize_t k = read(fd, buf + n, 1);
                if (k <= 0)
                        return -1;
                if (buf[n] == '\n') {
                        buf[n] = '\0';
                        return (int) n;
                }
                n++;
        }
        return -1;
}

static inline void fake_say(int fd, const char *fmt, ...) _printf_(2, 3);
static inline void fake_say(int fd, const char *fmt, ...) {
        char *line = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&line, fmt, ap); /* a data event may carry hundreds of KiB */
        va_end(ap);
        if (n > 0)
                (void) loop_send(fd, line, (size_t) n);
        free(line);
}

/* A listening socket at a new path in /tmp named after tag (written into path); -errno. */
static inline int fake_listen(char path[FAKE_SEATD_PATH_MAX], const char *tag, int backlog) {
        static int seq;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(path, FAKE_SEATD_PATH_MAX, "/tmp/test-web-%s-%d-%d.sock", tag, (int) getpid(), seq++);
        (void) unlink(path);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, backlog) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static inline void fake_unlisten(int fd, const char *path) {
        if (fd >= 0)
                close(fd);
        (void) unlink(path);
}

/* A listening socket at a new path named after tag, and fn(arg) started in *thread (it
 * accepts on *listen_fd): 0, or -errno with nothing left open. */
static inline int fake_serve(char path[FAKE_SEATD_PATH_MAX], int *listen_fd, pthread_t *thread, const char *tag,
                             void *(*fn)(void *), void *arg) {
        *listen_fd = fake_listen(path, tag, 1);
        if (*listen_fd < 0)
                return *listen_fd;
        int r = pthread_create(thread, NULL, fn, arg);
        if (r != 0) {
                fake_unlisten(*listen_fd, path);
                *listen_fd = -1;
                return -r;
        }
        return 0;
}

/* After fake_serve(): the script's thread joined, the socket gone. */
static inline void fake_stop(pthread_t thread, int listen_fd, const char *path) {
        pthread_join(thread, NULL);
        fake_unlisten(listen_fd, path);
}

/* A data event on stream 3, the stream the forward scripts open: the guest's bytes d[0..n)
 * as seatd relays them. The including test has cmocka.h. */
static inline void fake_forward_data(int fd, const void *d, size_t n) {
        _cleanup_free_ char *b64 = NULL;
        assert_int_equal(base64_encode(d, n, &b64, NULL), 0);
        fake_say(fd, "{\"id\":2,\"type\":\"data\",\"data\":{\"stream\":3,\"data\":\"%s\"}}\n", b64);
}
