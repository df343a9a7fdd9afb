/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A secret key file from outside. Unprotected keys go all the way (checksum, seed
 * consistency); for protected ones the password callback declines, so no scrypt runs
 * (a hostile file may ask for up to SEAT_KDF_MEMLIMIT_MAX of it). A key that loads must
 * sign something that verifies with its public half.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "signing/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int no_password(char *buf, size_t n, void *userdata) {
        return -ENOKEY;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(seat_secret_key_freep) SeatSecretKey *sk = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *sig = NULL;
        SeatPublicKey pk;

        int r = seat_secret_key_parse((const char *) data, size, no_password, NULL, &sk, &e);
        if (r < 0) {
                if (!e || sk)
                        abort();
                return 0;
        }
        seat_secret_key_public(sk, &pk);
        if (seat_sign_buffer(sk, "x", 1, "fuzz", NULL, &sig, NULL) < 0 ||
            seat_verify_buffer(&pk, "x", 1, sig, strlen(sig), 0, NULL, NULL) < 0)
                abort();
        return 0;
}
