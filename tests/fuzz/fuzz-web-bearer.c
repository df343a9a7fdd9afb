/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's Authorization header (MCP over HTTP): any bytes give one token68 or a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char out[WEB_TOKEN_HEX + 2];
        int r = web_bearer_get((const char *) data, size, out, sizeof(out));
        if (r == 0) {
                size_t n = strlen(out);
                if (n == 0 || n >= sizeof(out))
                        abort();
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) out[i] <= 0x20 || (unsigned char) out[i] >= 0x7f || out[i] == ',' || out[i] == ';')
                                abort();
                (void) web_token_valid(out);
        } else if (r != -ENOENT && r != -EBADMSG && r != -E2BIG)
                abort();
        return 0;
}
