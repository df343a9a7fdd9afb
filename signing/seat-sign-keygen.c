/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "minisign.h"
#include "seat-sign.h"
#include "sodium-cleanup.h"

static void keygen_help(void) {
        printf("NAME\n"
               "    seat-sign keygen - create a minisign-compatible key pair\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-sign keygen -p PUBFILE -s SECFILE [-W] [-f] [--password-file FILE]\n"
               "\n"
               "DESCRIPTION\n"
               "    Creates an Ed25519 key pair with a random 8-byte key id. The secret key is written\n"
               "    to SECFILE (mode 0600, atomically), protected by a password: the key id, secret key\n"
               "    and checksum are XORed with scrypt (crypto_pwhash_scryptsalsa208sha256, opslimit\n"
               "    33554432, memlimit 1 GiB, as minisign does). The public key goes to PUBFILE.\n"
               "    Both files are read by minisign(1) as well.\n"
               "\n"
               "OPTIONS\n"
               "    -p, --public-key=PUBFILE   where to write the public key (required)\n"
               "    -s, --secret-key=SECFILE   where to write the secret key (required)\n"
               "    -W, --no-password          store the secret key unprotected (like minisign -W);\n"
               "                               anyone who reads the file can sign\n"
               "    -f, --force                overwrite existing key files\n"
               "        --password-file=FILE   read the password from the first line of FILE\n"
               "    -h, --help                 show this help\n"
               "\n"
               "PASSWORD\n"
               "    Taken from --password-file, else from $" SEAT_SIGN_PASSWORD_ENV ", else asked twice on\n"
               "    the terminal (/dev/tty, not echoed). An empty password is refused: use -W.\n"
               "\n"
               "EXIT STATUS\n"
               "    0 the key pair was written; 1 it was not (a file exists, passwords differ, I/O\n"
               "    error); 2 usage error.\n"
               "\n"
               "EXAMPLE\n"
               "    seat-sign keygen -p images.pub -s ~/.seatd/images.key\n");
}

int verb_keygen(int argc, char *argv[], SeatError **ret_error) {
        SignOptions o = {};
        int r;

        r = sign_options_parse(argc, argv,
                               SIGN_OPTION_PUBLIC_KEY | SIGN_OPTION_SECRET_KEY | SIGN_OPTION_NO_PASSWORD |
                                       SIGN_OPTION_FORCE | SIGN_OPTION_PASSWORD_FILE,
                               "keygen", keygen_help, &o, ret_error);
        if (r <= 0)
                return r;
        if (!o.pub_path || !o.sec_path)
                return usage_error(ret_error, "keygen", "both -p PUBFILE and -s SECFILE are required");
        if (o.no_password && o.password_file)
                return usage_error(ret_error, "keygen", "-W and --password-file exclude each other");
        r = keygen_check_paths(o.pub_path, o.sec_path, o.force, ret_error);
        if (r < 0)
                return r;

        _cleanup_sodium_ char *password = NULL;
        if (!o.no_password) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "new secret key '%s'", o.sec_path) < 0)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                PasswordSource src = { .file = o.password_file, .what = what };
                r = password_get(&src, true, &password, ret_error);
                if (r < 0)
                        return r;
                if (password[0] == '\0')
                        return seat_error_set(ret_error, EINVAL,
                                              "an empty password protects nothing: give one, or use -W to "
                                              "store the key unprotected on purpose");
        } else
                log_warning("the secret key '%s' is stored WITHOUT a password: whoever reads it can sign",
                            o.sec_path);

        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        r = seat_secret_key_generate(&sk);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot generate a key pair: %s", strerror(-r));
        r = seat_secret_key_save(sk, o.sec_path, password, NULL, ret_error);
        if (r < 0)
                return r;

        SeatPublicKey pk;
        seat_secret_key_public(sk, &pk);
        r = seat_public_key_save(&pk, o.pub_path, ret_error);
        if (r < 0) {
                (void) unlink(o.sec_path); /* half a key pair is no use */
                return r;
        }

        _cleanup_free_ char *b64 = NULL;
        if (seat_public_key_to_base64(&pk, &b64) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        printf("The secret key was saved as %s - keep it secret.\n"
               "The public key was saved as %s - that one can be public.\n"
               "Key id: %016" PRIX64 "\n"
               "\n"
               "Files signed with this key pair can be verified with:\n"
               "seat-sign verify -P %s -m FILE\n",
               o.sec_path, o.pub_path, seat_key_id_value(pk.key_id), b64);
        return 0;
}
