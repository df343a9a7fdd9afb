/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <termios.h>

/*
 * Reading a password typed at a terminal: the two steps that seat-sign and seat-web passwd
 * share. Each caller keeps its own policy around them (where the prompt goes, whether a
 * terminal that refuses echo-off is an error, how the old settings are put back).
 */

/* Echo off on the terminal fd, the newline still echoed so the next prompt starts on a
 * line of its own. *ret_old receives the settings to restore. -errno if fd is no terminal
 * or refuses the change. */
int password_echo_off(int fd, struct termios *ret_old);

/* One line from fd, read a byte at a time so nothing past its newline is consumed, into
 * buf (max+1 bytes) without the newline; ends at the newline or EOF. buf is NUL-terminated
 * and *ret_len set whatever the result. -E2BIG past max bytes, -errno on a read error. */
int password_read_line(int fd, char *buf, size_t max, size_t *ret_len);
