/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An archive from outside, parsed up to decryption (evidence/archive.c): layout, manifest,
 * chunk structure, payload digest; once without the signature check (to reach the
 * payload), once against a fixed host key. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/archive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const uint8_t *data, size_t size, const SeatPublicKey *pk) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_error_ SeatError *e = NULL;
        int r = archive_verify_buffer(data, size, pk, NULL, NULL, &m, &e);
        if (r < 0 && (!e || !e->message || e->code != -r || m))
                abort();
        if (r >= 0 && (e || !m))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static SeatPublicKey pk = { .key_id = { 1 }, .pk = { 2 } };
        check(data, size, NULL);
        check(data, size, &pk);
        return 0;
}
