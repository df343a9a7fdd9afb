/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Strict decoding accepts only canonical input: decode then encode gives the input back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ void *d = NULL;
        _cleanup_free_ char *e = NULL;
        size_t n, m;

        if (base64_decode((const char *) data, size, size, &d, &n) < 0)
                return 0;
        if (base64_encode(d, n, &e, &m) < 0)
                abort();
        if (m != size || memcmp(e, data, size) != 0)
                abort();
        return 0;
}
