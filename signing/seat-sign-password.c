/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <termios.h>

#include "common/fileio.h"
#include "common/password.h"
#include "minisign.h"
#include "seat-sign.h"

static void sodium_freep(void *p) {
        void **pp = p;
        sodium_free(*pp);
        *pp = NULL;
}

/* First line of a password file, without its "\n" or "\r\n". */
static int password_from_file(const char *path, char *out, size_t size, SeatError **ret_error) {
        char *buf = NULL;
        size_t n = 0;
        int r = read_file_capped(path, SEAT_PASSWORD_MAX + 2, &buf, &n);
        if (r == -EFBIG)
                return seat_error_set(ret_error, EFBIG, "password file '%s' is longer than a password (%u bytes)",
                                      path, SEAT_PASSWORD_MAX);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read password file '%s': %s", path, strerror(-r));

        size_t len = strcspn(buf, "\n");
        bool rest = len < n && len + 1 < n;
        if (len > 0 && buf[len - 1] == '\r')
                len--;
        if (rest || len >= size) {
                sodium_memzero(buf, n);
                free(buf);
                return seat_error_set(ret_error, EINVAL,
                                      rest ? "password file '%s' has more than one line"
                                           : "password in '%s' is too long", path);
        }
        memcpy(out, buf, len);
        out[len] = '\0';
        sodium_memzero(buf, n);
        free(buf);
        return 0;
}

static int tty_read_line(int fd, const char *prompt, char *out, size_t size, SeatError **ret_error) {
        struct termios old;
        bool echo_off = password_echo_off(fd, &old) >= 0;
        size_t len;
        int r;

        (void) loop_write(fd, prompt, strlen(prompt));
        r = password_read_line(fd, out, size - 1, &len);
        if (echo_off)
                (void) tcsetattr(fd, TCSAFLUSH, &old);
        if (r == -E2BIG)
                return seat_error_set(ret_error, EINVAL, "password is longer than %zu bytes", size - 1);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read the password from the terminal: %s", strerror(-r));
        return 0;
}

static int password_from_tty(const char *what, bool confirm, char *out, size_t size, SeatError **ret_error) {
        _cleanup_close_ int fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
        _cleanup_(sodium_freep) char *again = NULL;
        _cleanup_free_ char *prompt = NULL;
        int r;

        if (fd < 0)
                return seat_error_set(ret_error, ENXIO,
                                      "no terminal to ask the password of %s on: use --password-file FILE or "
                                      "set " SEAT_SIGN_PASSWORD_ENV, what);
        if (asprintf(&prompt, "Password for %s: ", what) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = tty_read_line(fd, prompt, out, size, ret_error);
        if (r < 0 || !confirm)
                return r;
        again = sodium_malloc(size);
        if (!again)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = tty_read_line(fd, "Password (again): ", again, size, ret_error);
        if (r < 0)
                return r;
        if (strcmp(out, again) != 0)
                return seat_error_set(ret_error, EINVAL, "the two passwords differ: nothing was written");
        return 0;
}

static int password_fill(PasswordSource *src, bool confirm, char *out, size_t size, SeatError **ret_error) {
        if (src->file)
                return password_from_file(src->file, out, size, ret_error);
        const char *env = getenv(SEAT_SIGN_PASSWORD_ENV);
        if (env) {
                if (strlen(env) >= size)
                        return seat_error_set(ret_error, EINVAL, "$" SEAT_SIGN_PASSWORD_ENV " is too long");
                strcpy(out, env);
                return 0;
        }
        return password_from_tty(src->what, confirm, out, size, ret_error);
}

int password_get(PasswordSource *src, bool confirm, char **ret, SeatError **ret_error) {
        _cleanup_(sodium_freep) char *pw = sodium_malloc(SEAT_PASSWORD_MAX + 1);
        if (!pw)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        int r = password_fill(src, confirm, pw, SEAT_PASSWORD_MAX + 1, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pw);
        return 0;
}

int password_source_callback(char *buf, size_t size, void *userdata) {
        PasswordSource *src = userdata;
        return password_fill(src, false, buf, size, &src->error);
}

char *terminal_escape(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        size_t n = strlen(s);
        char *out = malloc(4 * n + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool c1 = p[i] == 0xc2 && i + 1 < n && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f; /* UTF-8 C1 */
                if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f || c1) {
                        o += sprintf(o, "\\x%02x", p[i]);
                        if (c1)
                                o += sprintf(o, "\\x%02x", p[++i]);
                } else
                        *o++ = (char) p[i];
        }
        *o = '\0';
        return out;
}
