/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A public key file (and a bare -P string) from outside: what parses must format back to
 * something that parses to the same key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "signing/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void roundtrip(const SeatPublicKey *pk) {
        _cleanup_free_ char *text = NULL, *b64 = NULL;
        SeatPublicKey again;

        if (seat_public_key_format(pk, NULL, &text) < 0 ||
            seat_public_key_parse(text, strlen(text), &again, NULL) < 0 ||
            memcmp(pk, &again, sizeof(again)) != 0)
                abort();
        if (seat_public_key_to_base64(pk, &b64) < 0 ||
            seat_public_key_from_base64(b64, strlen(b64), &again, NULL) < 0 ||
            memcmp(pk, &again, sizeof(again)) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_error_ SeatError *e1 = NULL, *e2 = NULL;
        SeatPublicKey pk;

        int r = seat_public_key_parse((const char *) data, size, &pk, &e1);
        if (r >= 0)
                roundtrip(&pk);
        else if (!e1)
                abort();
        r = seat_public_key_from_base64((const char *) data, size, &pk, &e2);
        if (r >= 0)
                roundtrip(&pk);
        else if (!e2)
                abort();
        return 0;
}
