/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd-socket.c: connect, send and wait on seatd's control socket (seatd-socket.h). */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include "common/control-proto.h"
#include "common/fileio.h"
#include "seatd-socket.h"

int seatd_socket_connect(const char *path, int send_timeout_ms) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (send_timeout_ms > 0) {
                struct timeval tv = { .tv_sec = send_timeout_ms / 1000, .tv_usec = (send_timeout_ms % 1000) * 1000 };
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return negative_errno();
        return TAKE_FD(fd);
}

int seatd_socket_send(int fd, int64_t id, const char *method, json_object *params) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r = control_format_request(id, method, params, &line, &len);
        return r < 0 ? r : loop_send(fd, line, len);
}

int seatd_socket_fill(int fd, FrameReader *rd, int64_t deadline_ms) {
        int64_t left = deadline_ms - now_monotonic_ms();
        if (left <= 0)
                return -ETIMEDOUT;
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int r = poll(&p, 1, (int) left);
        if (r < 0)
                return errno == EINTR ? 0 : negative_errno();
        if (r == 0)
                return -ETIMEDOUT;
        ssize_t n = frame_reader_fill(rd, fd);
        if (n == 0)
                return -ECONNRESET;
        if (n < 0 && n != -EAGAIN)
                return (int) n;
        return 0;
}
