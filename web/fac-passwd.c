/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/password.h"
#include "fac-passwd.h"
#include "facilitators.h"

#define LINE_SIZE (FAC_PASSWORD_MAX + 2)

/* One line from fd into buf (no newline kept); echo off on a terminal. -E2BIG past
 * FAC_PASSWORD_MAX, -ENODATA for nothing at all. */
static int read_line(int fd, const char *prompt, char *buf, size_t *ret_len) {
        struct termios old;
        bool tty = isatty(fd);
        size_t n;
        int r;

        if (tty) {
                /* Echo off first, then the prompt: what is typed after the prompt must
                 * never be flushed (TCSAFLUSH drops only what came before it). */
                r = password_echo_off(fd, &old);
                if (r < 0)
                        return r;
                (void) loop_write(STDERR_FILENO, prompt, strlen(prompt));
        }
        r = password_read_line(fd, buf, FAC_PASSWORD_MAX, &n);
        if (tty)
                (void) tcsetattr(fd, TCSANOW, &old);
        if (r == 0 && n > 0 && buf[n - 1] == '\r')
                buf[--n] = '\0';
        if (r == 0 && n == 0)
                r = -ENODATA;
        *ret_len = n;
        return r;
}

static int read_password(char *pw, size_t *ret_len, SeatError **ret_error) {
        size_t n = 0, n2 = 0;
        int r = read_line(STDIN_FILENO, "Password: ", pw, &n);
        if (r == -E2BIG)
                return seat_error_set(ret_error, E2BIG, "the password is longer than %d bytes", FAC_PASSWORD_MAX);
        if (r < 0)
                return seat_error_set(ret_error, -r, "no password read from %s", isatty(STDIN_FILENO) ? "the terminal" : "stdin");
        if (isatty(STDIN_FILENO)) {
                /* Typed blind: asked twice so a typo does not lock the facilitator out. */
                char *again = sodium_malloc(LINE_SIZE);
                if (!again)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                r = read_line(STDIN_FILENO, "Again: ", again, &n2);
                bool same = r == 0 && n2 == n && sodium_memcmp(again, pw, n) == 0;
                sodium_free(again);
                if (!same)
                        return seat_error_set(ret_error, EINVAL, "the two passwords differ: nothing changed");
        }
        *ret_len = n;
        return 0;
}

int fac_passwd(const WebConfig *c, const char *file, const char *name, SeatError **ret_error) {
        const char *path = file ? file : c->facilitators_file;
        char hash[crypto_pwhash_STRBYTES];
        FacUsers *users = NULL;
        uid_t uid = (uid_t) -1;
        gid_t gid = (gid_t) -1;
        struct stat st;
        size_t len = 0;
        int r;

        if (!fac_name_valid(name))
                return seat_error_set(ret_error, EINVAL,
                                      "'%s' is not a facilitator name (1..%d of a-z, 0-9, '.', '_', '-', starting with a letter or digit)",
                                      name, FAC_NAME_MAX);
        if (sodium_init() < 0)
                return seat_error_set(ret_error, EIO, "libsodium did not initialise");
        /* The hashes of the others are kept: the table lives in guarded memory too. */
        users = sodium_malloc(sizeof(*users));
        char *pw = sodium_malloc(LINE_SIZE);
        if (!users || !pw) {
                r = seat_error_set(ret_error, ENOMEM, "out of memory");
                goto out;
        }
        r = fac_users_load(path, users);
        if (r == -ENOENT) {
                memset(users, 0, sizeof(*users));
                r = 0;
        } else if (r == -EBADMSG) {
                r = seat_error_set(ret_error, EBADMSG, "'%s' is not a facilitators file (NAME:argon2id-hash lines): nothing changed", path);
                goto out;
        } else if (r < 0) {
                r = seat_error_set(ret_error, -r, "cannot read '%s': %s", path, strerror(-r));
                goto out;
        }
        r = read_password(pw, &len, ret_error);
        if (r < 0)
                goto out;
        r = fac_password_hash(pw, len, hash);
        if (r < 0) {
                r = seat_error_set(ret_error, -r, "argon2id could not hash the password (%u MiB of memory needed)",
                                   FAC_PWHASH_MEMLIMIT >> 20);
                goto out;
        }
        r = fac_users_set(users, name, hash);
        if (r < 0) {
                r = seat_error_set(ret_error, -r, "cannot add '%s': the file holds %d names at most", name, FAC_USERS_MAX);
                goto out;
        }
        /* Written by root for the daemon: the file is its state dir's owner's, as
         * seat-web --self-signed and --link do. */
        if (geteuid() == 0 && stat(c->state_dir, &st) == 0) {
                uid = st.st_uid;
                gid = st.st_gid;
        }
        r = fac_users_save(path, users, uid, gid);
        if (r < 0)
                r = seat_error_set(ret_error, -r, "cannot write '%s': %s", path, strerror(-r));
out:
        sodium_memzero(hash, sizeof(hash));
        sodium_free(pw);
        sodium_free(users);
        return r;
}
