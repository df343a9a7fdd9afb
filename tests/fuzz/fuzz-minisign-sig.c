/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A signature file from outside: parse, compare key ids, verify. The trusted key is the
 * one the corpus was signed with (minisign -G -W), the signed data "hello\n", so seeds
 * reach the Ed25519 checks. Every rejection must carry a reason; success a comment.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "signing/minisign.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char TRUSTED[] = "RWR42zrLIHo1cMdF5dtTOqIhugYGlcAdwVg6MnKS+/qq2Ee9UdJXlLLR";
static const char SIGNED_DATA[] = "hello\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static SeatPublicKey pk;
        static bool have_pk;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *tc = NULL;

        if (!have_pk) {
                if (seat_public_key_from_base64(TRUSTED, strlen(TRUSTED), &pk, NULL) < 0)
                        abort();
                have_pk = true;
        }
        int r = seat_verify_buffer(&pk, SIGNED_DATA, strlen(SIGNED_DATA), (const char *) data, size, 0, &tc, &e);
        if (r < 0 && (!e || !e->message || e->code != -r))
                abort();
        if (r >= 0 && (e || !tc))
                abort();
        return 0;
}
