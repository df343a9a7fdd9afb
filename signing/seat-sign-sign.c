/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
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
        enum { ARG_PASSWORD_FILE = 0x100 };
        static const struct option options[] = {
                { "secret-key", required_argument, NULL, 's' },
                { "file", required_argument, NULL, 'm' },
                { "signature", required_argument, NULL, 'x' },
                { "trusted-comment", required_argument, NULL, 't' },
                { "untrusted-comment", required_argument, NULL, 'c' },
                { "password-file", required_argument, NULL, ARG_PASSWORD_FILE },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        const char *sec_path = NULL, *file = NULL, *sig_arg = NULL, *tc_arg = NULL, *uc = NULL,
                   *password_file = NULL;
        _cleanup_free_ char *sig_path = NULL, *tc = NULL, *what = NULL, *sig_text = NULL;
        int c, r;

        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "s:m:x:t:c:h", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        sec_path = optarg;
                        break;
                case 'm':
                        file = optarg;
                        break;
                case 'x':
                        sig_arg = optarg;
                        break;
                case 't':
                        tc_arg = optarg;
                        break;
                case 'c':
                        uc = optarg;
                        break;
                case ARG_PASSWORD_FILE:
                        password_file = optarg;
                        break;
                case 'h':
                        sign_help();
                        return 0;
                default:
                        return usage_bad_option(ret_error, "sign", argv);
                }
        r = usage_no_operands(ret_error, "sign", argc, argv);
        if (r < 0)
                return r;
        if (!sec_path || !file)
                return usage_error(ret_error, "sign", "both -s SECFILE and -m FILE are required");

        if (signature_path(file, sig_arg, &sig_path) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if (tc_arg)
                tc = strdup(tc_arg);
        else if (default_trusted_comment(file, &tc) < 0)
                tc = NULL;
        if (!tc)
                return seat_error_set(ret_error, ENOMEM, "out of memory");

        if (asprintf(&what, "secret key '%s'", sec_path) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        PasswordSource src = { .file = password_file, .what = what };
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        r = seat_secret_key_load(sec_path, password_source_callback, &src, &sk, ret_error);
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
                log_warning("secret key '%s' is not protected by a password", sec_path);

        r = seat_sign_file(sk, file, tc, uc, &sig_text, ret_error);
        if (r < 0)
                return r;
        r = write_file_atomic(sig_path, sig_text, strlen(sig_text), 0644);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write signature file '%s': %s", sig_path, strerror(-r));
        return 0;
}
