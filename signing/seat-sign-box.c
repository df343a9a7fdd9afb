/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-sign keygen --box: facilitator X25519 key pairs for sealed evidence archives. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "boxkey.h"
#include "common/log.h"
#include "seat-sign.h"

static void keygen_box_help(void) {
        printf("NAME\n"
               "    seat-sign keygen --box - create a facilitator box key pair (X25519)\n"
               "\n"
               "SYNOPSIS\n"
               "    seat-sign keygen --box -p PUBFILE -s SECFILE [-f]\n"
               "\n"
               "DESCRIPTION\n"
               "    Creates an X25519 key pair for crypto_box_seal: seatd seals evidence archives\n"
               "    to PUBFILE, and only SECFILE opens them (seat-evidence open --key SECFILE).\n"
               "    The files carry the tag 'BX' (signing keys carry 'Ed'): one is never taken for\n"
               "    the other. The secret key is stored WITHOUT a password (mode 0600): keep it\n"
               "    offline (docs/evidence-format.md).\n"
               "\n"
               "OPTIONS\n"
               "    -p, --public-key=PUBFILE   where to write the public key (required)\n"
               "    -s, --secret-key=SECFILE   where to write the secret key (required)\n"
               "    -f, --force                overwrite existing key files\n"
               "    -h, --help                 show this help\n");
}

static int verb_keygen_box(int argc, char *argv[], SeatError **ret_error) {
        SignOptions o = {};
        int r;

        r = sign_options_parse(argc, argv,
                               SIGN_OPTION_BOX | SIGN_OPTION_PUBLIC_KEY | SIGN_OPTION_SECRET_KEY | SIGN_OPTION_FORCE,
                               "keygen", keygen_box_help, &o, ret_error);
        if (r <= 0)
                return r;
        if (!o.pub_path || !o.sec_path)
                return usage_error(ret_error, "keygen", "both -p PUBFILE and -s SECFILE are required");
        r = keygen_check_paths(o.pub_path, o.sec_path, o.force, ret_error);
        if (r < 0)
                return r;

        _cleanup_(seat_box_secret_key_freep) SeatBoxSecretKey *sk = NULL;
        r = seat_box_key_generate(&sk);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot generate a box key pair: %s", strerror(-r));
        r = seat_box_secret_key_save(sk, o.sec_path, ret_error);
        if (r < 0)
                return r;
        SeatBoxPublicKey pk;
        seat_box_key_public(sk, &pk);
        r = seat_box_public_key_save(&pk, o.pub_path, ret_error);
        if (r < 0) {
                (void) unlink(o.sec_path);
                return r;
        }
        log_warning("the box secret key '%s' is stored WITHOUT a password: keep it offline", o.sec_path);
        printf("The facilitator's secret box key was saved as %s - keep it secret and offline.\n"
               "The public box key was saved as %s - give it to seatd (archives are sealed to it).\n",
               o.sec_path, o.pub_path);
        return 0;
}

int verb_keygen_any(int argc, char *argv[], SeatError **ret_error) {
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "--box") == 0)
                        return verb_keygen_box(argc, argv, ret_error);
        }
        return verb_keygen(argc, argv, ret_error);
}
