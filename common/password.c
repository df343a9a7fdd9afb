/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <unistd.h>

#include "password.h"

int password_echo_off(int fd, struct termios *ret_old) {
        struct termios quiet;

        if (tcgetattr(fd, ret_old) < 0)
                return -errno;
        quiet = *ret_old;
        quiet.c_lflag &= ~(tcflag_t) ECHO;
        quiet.c_lflag |= ECHONL;
        if (tcsetattr(fd, TCSAFLUSH, &quiet) < 0)
                return -errno;
        return 0;
}

int password_read_line(int fd, char *buf, size_t max, size_t *ret_len) {
        size_t n = 0;
        int r = 0;

        for (;;) {
                char c;
                ssize_t k = read(fd, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                if (k == 0 || c == '\n')
                        break;
                if (n >= max) {
                        r = -E2BIG;
                        break;
                }
                buf[n++] = c;
        }
        buf[n] = '\0';
        *ret_len = n;
        return r;
}
