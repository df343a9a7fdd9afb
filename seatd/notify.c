/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common/macro.h"
#include "notify.h"

int notify_send(const char *state) {
        const char *e = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len;

        if (!e || !*e)
                return 0;
        /* A path, or '@' for a name in the abstract namespace (systemd's own form). Other
         * transports (vsock:) are for VMs and containers, not for a host daemon. */
        if (e[0] != '/' && e[0] != '@')
                return -EAFNOSUPPORT;
        len = strlen(e);
        if (len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, e, len);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0'; /* abstract: the name is exactly len bytes, no NUL */

        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        /* One datagram: the manager reads the whole state or nothing. */
        ssize_t n = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *) &sa,
                           (socklen_t) (offsetof(struct sockaddr_un, sun_path) + len));
        if (n < 0)
                return negative_errno();
        if ((size_t) n != strlen(state))
                return -EMSGSIZE;
        return 1;
}
