/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* server-listen.c: the operator, participant and facilitator sockets, made with their owner and mode. */
#include "config.h"
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/log.h"
#include "server-internal.h"

static int mkdir_parents(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *q = p + 1; *q; q++) {
                if (*q != '/')
                        continue;
                *q = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return negative_errno();
                *q = '/';
        }
        return 0;
}

static const char *listener_key(const Listener *l) {
        return l->participant ? "participant_socket_path" : l->facilitator ? "facilitator_socket_path" : "socket_path";
}

/* The socket's owner and mode, on its temporary path: the operator socket to root and
 * the admin group, the facilitator socket to root and the facilitator group (a missing
 * group leaves either to root alone), the participant socket to everyone. */
static int listener_own(Listener *l, const char *tmp) {
        if (!l->participant) {
                const SeatConfig *c = l->server->config;
                const char *group = l->facilitator ? c->facilitator_group : c->admin_group;
                struct group *g = getgrnam(group);
                if (!g)
                        log_warning("group '%s' (%s) does not exist: '%s' is root's alone", group,
                                    l->facilitator ? "facilitator_group" : "admin_group", l->path);
                else if (chown(tmp, 0, g->gr_gid) < 0)
                        log_warning("cannot give '%s' to group '%s': %m", l->path, group);
        }
        if (chmod(tmp, l->participant ? 0666 : 0660) < 0)
                return negative_errno();
        return 0;
}

static int listener_open(Listener *l, SeatError **ret_error) {
        Server *s = l->server;
        const char *path = l->path;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct stat st;

        if (strlen(path) >= sizeof(sa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "%s '%s' is too long", listener_key(l), path);
        strcpy(sa.sun_path, path);
        int r = mkdir_parents(path, 0755);
        if (r < 0)
                return seat_error_set(ret_error, -r, "create the directory of '%s': %s", path, strerror(-r));

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return seat_error_set(ret_error, errno, "socket: %m");
        /* A socket left by a seatd that died: replace it, unless someone still listens. */
        if (lstat(path, &st) >= 0) {
                if (!S_ISSOCK(st.st_mode))
                        return seat_error_set(ret_error, EEXIST, "'%s' exists and is not a socket: remove it", path);
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (probe >= 0 && connect(probe, (struct sockaddr *) &sa, sizeof(sa)) >= 0)
                        return seat_error_set(ret_error, EADDRINUSE, "another seatd is listening on '%s'", path);
                (void) unlink(path);
        }
        /* The operator socket: root and the admin group (0660). The participant socket:
         * every local user (0666); what a token opens is decided per request. seatd's
         * threads (adoption, sealing) are running by now, so the mode is not set through
         * the process-wide umask: the socket is bound under a temporary name, given its
         * owner and mode there, and renamed into place. Its final path never exists with
         * another mode; the temporary one is at most 0777 & ~umask, which lets nobody but
         * root connect (connect needs write permission) while the default 0022 holds. */
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.%d.tmp", path, (int) getpid()) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        struct sockaddr_un tsa = { .sun_family = AF_UNIX };
        if (strlen(tmp) >= sizeof(tsa.sun_path))
                return seat_error_set(ret_error, ENAMETOOLONG, "%s '%s' is too long (seatd needs %zu more bytes for a temporary name)",
                                      listener_key(l), path, strlen(tmp) - strlen(path));
        strcpy(tsa.sun_path, tmp);
        (void) unlink(tmp);
        if (bind(fd, (struct sockaddr *) &tsa, sizeof(tsa)) < 0)
                return seat_error_set(ret_error, errno, "bind '%s': %m", tmp);
        r = listener_own(l, tmp);
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                return seat_error_set(ret_error, -r, "cannot put the socket '%s' in place: %s", path, strerror(-r));
        }
        if (listen(fd, 64) < 0)
                return seat_error_set(ret_error, errno, "listen on '%s': %m", path);
        r = event_add_io(s->loop, fd, EPOLLIN, server_accept, l, &l->src);
        if (r < 0)
                return seat_error_set(ret_error, -r, "event loop: %s", strerror(-r));
        l->fd = TAKE_FD(fd);
        return 0;
}

int server_listen(Server *s, SeatError **ret_error) {
        for (size_t i = 0; i < ELEMENTSOF(s->listeners); i++) {
                int r = listener_open(&s->listeners[i], ret_error);
                if (r < 0)
                        return r;
        }
        s->sweep_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (s->sweep_fd < 0)
                return seat_error_set(ret_error, errno, "timerfd: %m");
        struct itimerspec its = { .it_interval = { SWEEP_INTERVAL_S, 0 }, .it_value = { SWEEP_INTERVAL_S, 0 } };
        if (timerfd_settime(s->sweep_fd, 0, &its, NULL) < 0)
                return seat_error_set(ret_error, errno, "timerfd: %m");
        int r = event_add_io(s->loop, s->sweep_fd, EPOLLIN, server_sweep, s, &s->sweep_src);
        if (r < 0)
                return seat_error_set(ret_error, -r, "event loop: %s", strerror(-r));
        return 0;
}
