/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where frames come from: the virtio-serial port org.seatd.agent.0, a unix socket (host
 * tests, one connection at a time, a new one replaces the old) or stdio.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/log.h"
#include "transport.h"

#define VIRTIO_PORTS_DIR "/sys/class/virtio-ports"
#define PORT_POLL_INTERVAL_MS 100

void transport_init(Transport *t) {
        *t = (Transport) { .fd = -EBADF, .out_fd = -EBADF, .listen_fd = -EBADF };
}

void transport_close(Transport *t) {
        if (t->out_fd != t->fd)
                safe_close(t->out_fd);
        safe_close(t->fd);
        safe_close(t->listen_fd);
        if (t->mode == TRANSPORT_UNIX && t->path)
                (void) unlink(t->path);
        free(t->path);
        transport_init(t);
}

static void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
        *d = NULL;
}

static void sleep_ms(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* /sys/class/virtio-ports/<entry>/name holds the port's name; the device is /dev/<entry>. */
static int virtio_find_port(char **ret_dev) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        d = opendir(VIRTIO_PORTS_DIR);
        if (!d)
                return -errno;

        while ((de = readdir(d))) {
                _cleanup_free_ char *p = NULL, *name = NULL;
                size_t len;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&p, VIRTIO_PORTS_DIR "/%s/name", de->d_name) < 0)
                        return -ENOMEM;
                if (read_file_capped(p, 4096, &name, &len) < 0)
                        continue;
                while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == ' '))
                        name[--len] = '\0';
                if (strcmp(name, AGENT_PORT_NAME) != 0)
                        continue;
                if (asprintf(ret_dev, "/dev/%s", de->d_name) < 0)
                        return -ENOMEM;
                return 0;
        }
        return -ENOENT;
}

int transport_open_virtio(Transport *t, int64_t timeout_ms) {
        _cleanup_free_ char *dev = NULL;
        _cleanup_close_ int fd = -EBADF;
        int64_t deadline = now_monotonic_ms() + timeout_ms;
        int r, flags;

        for (;;) {
                r = virtio_find_port(&dev);
                if (r >= 0) {
                        fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                        if (fd >= 0)
                                break;
                        r = -errno;
                        free(dev);
                        dev = NULL;
                }
                if (now_monotonic_ms() >= deadline)
                        return log_error_errno(r, "Cannot find virtio port '%s': %m", AGENT_PORT_NAME);
                sleep_ms(PORT_POLL_INTERVAL_MS);
        }

        /* SIGIO (through our signalfd) when the host connects or disconnects. */
        if (fcntl(fd, F_SETOWN, getpid()) < 0)
                return log_error_errno(errno, "F_SETOWN on '%s': %m", dev);
        if (fcntl(fd, F_SETSIG, 0) < 0)
                return log_error_errno(errno, "F_SETSIG on '%s': %m", dev);
        flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_ASYNC | O_NONBLOCK) < 0)
                return log_error_errno(errno, "O_ASYNC on '%s': %m", dev);

        log_info("Agent port is '%s'", dev);
        transport_close(t);
        t->mode = TRANSPORT_VIRTIO;
        t->fd = t->out_fd = TAKE_FD(fd);
        t->path = TAKE_PTR(dev);
        t->connected = false; /* transport_probe() says */
        return 0;
}

int transport_probe(Transport *t) {
        struct pollfd p = { .fd = t->fd, .events = POLLIN };
        int r;

        if (t->fd < 0)
                return -EBADF;
        r = poll(&p, 1, 0);
        if (r < 0)
                return -errno;
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
                return 0;
        return 1;
}

int transport_open_unix(Transport *t, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        if (strlen(path) >= sizeof(sa.sun_path))
                return log_error_errno(ENAMETOOLONG, "Socket path '%s' is too long", path);
        memcpy(sa.sun_path, path, strlen(path) + 1);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(errno, "socket(): %m");
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return log_error_errno(errno, "Cannot bind '%s': %m", path);
        if (listen(fd, 4) < 0)
                return log_error_errno(errno, "Cannot listen on '%s': %m", path);

        transport_close(t);
        t->mode = TRANSPORT_UNIX;
        t->listen_fd = TAKE_FD(fd);
        t->path = strdup(path);
        if (!t->path)
                return -ENOMEM;
        log_info("Listening on '%s'", path);
        return 0;
}

int transport_accept(Transport *t) {
        int fd;

        fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
                if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
                        return 0;
                return -errno;
        }
        if (t->fd >= 0)
                log_info("A new host connection replaces the current one");
        safe_close(t->fd);
        t->fd = t->out_fd = fd;
        t->connected = true;
        return 1;
}

int transport_open_stdio(Transport *t) {
        int r;

        transport_close(t);
        t->mode = TRANSPORT_STDIO;
        r = fd_set_nonblock(STDIN_FILENO, 1);
        if (r < 0)
                return log_error_errno(r, "Cannot make stdin non-blocking: %m");
        r = fd_set_nonblock(STDOUT_FILENO, 1);
        if (r < 0)
                return log_error_errno(r, "Cannot make stdout non-blocking: %m");
        t->fd = STDIN_FILENO;
        t->out_fd = STDOUT_FILENO;
        t->connected = true;
        return 0;
}

void transport_drop(Transport *t) {
        switch (t->mode) {
        case TRANSPORT_UNIX:
                t->fd = safe_close(t->fd);
                t->out_fd = -EBADF;
                t->connected = false;
                break;
        case TRANSPORT_VIRTIO:
                /* Keep the port open: the host reconnects, the kernel sends SIGIO. */
                t->connected = false;
                break;
        case TRANSPORT_STDIO:
                t->input_eof = true;
                break;
        }
}
