/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>

#include "common/fileio.h"
#include "minisign.h"
#include "seat-sign.h"

static void verify_help(void) {
        printf("NAME\n"
               "    seat-sign verify - verify a minisign signature and print its trusted comment\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-sign verify (-p PUBFILE | -P PUBKEY) -m FILE [-x SIGFILE] [-q | -Q] [-H]\n"
               "\n"
               "DESCRIPTION\n"
               "    Checks, in this order: the signature file's format and sizes; its algorithm ('ED'\n"
               "    prehashed, or legacy 'Ed' unless -H); that its key id is the trusted key's; the\n"
               "    Ed25519 signature over FILE; the global signature over the signature and the\n"
               "    trusted comment. Only then the trusted comment is printed, as minisign -V does:\n"
               "\n"
               "        Signature and comment signature verified\n"
               "        Trusted comment: timestamp:1700000000\tfile:debian.qcow2\thashed\n"
               "\n"
               "    Control characters in the trusted comment are printed escaped (\\xNN).\n"
               "\n"
               "OPTIONS\n"
               "    -p, --public-key=PUBFILE     trusted public key file (seat-sign or minisign)\n"
               "    -P, --public-key-base64=KEY  trusted public key as its base64 line\n"
               "    -m, --file=FILE              the signed file\n"
               "    -x, --signature=SIGFILE      signature file (default FILE.minisig)\n"
               "    -q, --quiet                  print nothing on success\n"
               "    -Q, --pretty-quiet           print only the trusted comment on success\n"
               "    -H, --require-prehashed      refuse legacy 'Ed' signatures\n"
               "    -h, --help                   show this help\n"
               "\n"
               "EXIT STATUS\n"
               "    0 the signature and the trusted comment verified; 1 they did not, or a file could\n"
               "    not be read (the reason is printed, e.g. \"signature was made by key X but the\n"
               "    trusted key is Y\", \"file does not match its signature\"); 2 usage error.\n"
               "\n"
               "EXAMPLE\n"
               "    seat-sign verify -p images.pub -m debian.qcow2\n");
}

int verb_verify(int argc, char *argv[], SeatError **ret_error) {
        _cleanup_free_ char *sig_path = NULL, *sig_text = NULL, *tc = NULL, *tc_safe = NULL;
        SignOptions o = {};
        size_t sig_len;
        int r;

        r = sign_options_parse(argc, argv,
                               SIGN_OPTION_PUBLIC_KEY | SIGN_OPTION_PUBLIC_KEY_BASE64 | SIGN_OPTION_FILE |
                                       SIGN_OPTION_SIGNATURE | SIGN_OPTION_QUIET | SIGN_OPTION_PRETTY_QUIET |
                                       SIGN_OPTION_REQUIRE_PREHASHED,
                               "verify", verify_help, &o, ret_error);
        if (r <= 0)
                return r;
        if (!o.file)
                return usage_error(ret_error, "verify", "-m FILE is required");
        if (!!o.pub_path == !!o.pub_b64)
                return usage_error(ret_error, "verify", "exactly one of -p PUBFILE and -P PUBKEY is needed");

        SeatPublicKey pk;
        if (o.pub_path)
                r = seat_public_key_load(o.pub_path, &pk, ret_error);
        else {
                r = seat_public_key_from_base64(o.pub_b64, strlen(o.pub_b64), &pk, ret_error);
                if (r < 0)
                        r = seat_error_wrap(ret_error, "-P '%s'", o.pub_b64);
        }
        if (r < 0)
                return r;

        if (signature_path(o.file, o.sig_arg, &sig_path) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = seat_sign_file_read(sig_path, "signature", "signature", SEAT_SIG_FILE_MAX, &sig_text, &sig_len, ret_error);
        if (r < 0)
                return r;

        unsigned flags = o.require_prehashed ? SEAT_VERIFY_REQUIRE_PREHASHED : 0;
        r = seat_verify_file(&pk, o.file, sig_text, sig_len, flags, &tc, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "'%s' (signature '%s')", o.file, sig_path);

        tc_safe = terminal_escape(tc);
        if (!tc_safe)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if (o.quiet == 0)
                printf("Signature and comment signature verified\nTrusted comment: %s\n", tc_safe);
        else if (o.quiet == 2)
                printf("%s\n", tc_safe);
        return 0;
}
