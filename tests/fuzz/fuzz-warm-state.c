/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sidecar of a saved machine state: any bytes are parsed or refused, never crash; what
 * parses formats back to the same bytes (with the same key). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seatd/warm-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The key the corpus files were MAC'ed with: 32 bytes of 0x42. */
        uint8_t key[WARM_KEY_BYTES];
        WarmMeta m;
        memset(key, 0x42, sizeof(key));
        int r = warm_meta_parse((const char *) data, size, key, &m);
        if (r == 0) {
                char *text = NULL;
                size_t len = 0;
                if (warm_meta_format(&m, key, &text, &len) < 0 || len != size || memcmp(text, data, size) != 0)
                        abort();
                free(text);
        } else if (r != -EBADMSG && r != -EKEYREJECTED)
                abort();
        return 0;
}
