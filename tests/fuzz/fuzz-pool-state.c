/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The saved pool sizes: any bytes are parsed or refused, never crash; what parses formats
 * back to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seatd/pool-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PoolSpec *specs = NULL;
        size_t n = 0;
        int r = pool_state_parse((const char *) data, size, &specs, &n);
        if (r == 0) {
                char *text = NULL;
                size_t len = 0;
                if (n > POOLS_MAX || pool_state_format(specs, n, &text, &len) < 0 || len != size ||
                    memcmp(text, data, size) != 0)
                        abort();
                free(text);
                free(specs);
        } else if (r != -EBADMSG && r != -ENOMEM)
                abort();
        return 0;
}
