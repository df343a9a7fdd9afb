/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/fileio.h"
#include "common/log.h"
#include "minisign.h"
#include "seat-sign.h"

static void sign_help(void) {
        printf("NAME\n"
               "    seat-sign sign - sign a file, minisign-compatible\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-sign sign -s SECFILE -m FILE [-x SIGFILE] [-t TRUSTED_COMMENT]\n"
               "                   [-c UNTRUSTED_COMMENT] [--password-file FILE]\n"
               "\n"
               "DESCRIPTION\n"
               "    Writes a prehashed ('ED') signature of FILE: Ed25519 over the BLAKE2b-512 of its\n"
               "    bytes, then a global Ed25519 signature over that signature and the trusted comment.\n"
               "    The signature file is written atomically (mode 0644). minisign -V verifies it.\n"
               "\n"
               "OPTIONS\n"
               "    -s, --secret-key=SECFILE        secret key (from seat-sign keygen or minisign -G)\n"
               "    -m, --file=FILE                 the file to sign\n"
               "    -x, --signature=SIGFILE         where to write the signature (default FILE.minisig)\n"
               "    -t, --trusted-comment=TEXT      one line, at most 8192 bytes, covered by the\n"
               "                                    signature (default, as minisign:\n"
               "                                    \"timestamp:<unix time>\\tfile:<basename>\\thashed\")\n"
               "    -c, --untrusted-comment=TEXT    one line, at most 1024 bytes, NOT covered (default\n"
               "                                    \"signature from seat-sign secret key\")\n"
               "        --password-file=FILE        read the key's password from the first line of FILE\n"
               "    -h, --help                      show this help\n"
               "\n"
               "PASSWORD\n"
               "    Asked only for a protected key: from --password-file, else $" SEAT_SIGN_PASSWORD_ENV ",\n"
               "    else once on the terminal. An unprotected key (-W) signs with a warning.\n"
               "\n"
               "EXIT STATUS\n"
               "    0 the signature was written; 1 it was not (wrong password, unreadable file...);\n"
               "    2 usage error (including a comment with a line break or over its size).\n"
               "\n"
               "EXAMPLE\n"
               "    seat-sign sign -s ~/.seatd/images.key -m debian.qcow2 -t 'image:debian-12 v:3'\n");
}

static int default_trusted_comment(const char *path, char **ret) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        if (asprintf(ret, "timestamp:%lld\tfile:%s\thashed", (long long) time(NULL), base) < 0)
                return -ENOMEM;
        return 0;
}

int verb_sign(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_free_ char *sig_path = NULL, *tc = NULL, *what = NULL, *sig_text = NULL;
        SignOptions o = {};
        int r;

        r = sign_options_parse(argc, argv,
                               SIGN_OPTION_SECRET_KEY | SIGN_OPTION_FILE | SIGN_OPTION_SIGNATURE |
                                       SIGN_OPTION_TRUSTED_COMMENT | SIGN_OPTION_UNTRUSTED_COMMENT |
                                       SIGN_OPTION_PASSWORD_FILE,
                               "sign", sign_help, &o, ret_error);
        if (r <= 0)
                return r;
        if (!o.sec_path || !o.file)
                return usage_error(ret_error, "sign", "both -s SECFILE and -m FILE are required");

        if (signature_path(o.file, o.sig_arg, &sig_path) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if (o.trusted_comment)
                tc = strdup(o.trusted_comment);
        else if (default_trusted_comment(o.file, &tc) < 0)
                tc = NULL;
        if (!tc)
                return seat_error_set(ret_error, ENOMEM, "out of memory");

        if (asprintf(&what, "secret key '%s'", o.sec_path) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        PasswordSource src = { .file = o.password_file, .what = what };
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        r = seat_secret_key_load(o.sec_path, password_source_callback, &src, &sk, ret_error);
        if (r < 0 && src.error) {
                /* The password source's own reason says what to do. */
                seat_error_free(*ret_error);
                *ret_error = TAKE_PTR(src.error);
                return -(*ret_error)->code;
        }
        seat_error_free(src.error);
        if (r < 0)
                return r;
        if (!seat_secret_key_was_protected(sk))
                log_warning("secret key '%s' is not protected by a password", o.sec_path);

        r = seat_sign_file(sk, o.file, tc, o.untrusted_comment, &sig_text, ret_error);
        if (r < 0)
                return r;
        r = write_file_atomic(sig_path, sig_text, strlen(sig_text), 0644);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write signature file '%s': %s", sig_path, strerror(-r));
        return 0;
}
