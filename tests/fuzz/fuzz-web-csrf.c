/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The X-CSRF-Token header: any bytes give a token of exactly 43 base64url characters, or
 * a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fac-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char out[FAC_CSRF_LEN + 1];
        int r = fac_csrf_get((const char *) data, size, out);
        if (r == 0) {
                if (strlen(out) != FAC_CSRF_LEN || !web_session_id_valid(out))
                        abort();
        } else if (r != -EBADMSG)
                abort();
        return 0;
}
