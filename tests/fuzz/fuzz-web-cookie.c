/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's Cookie header: any bytes give one value of cookie-octets or a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char out[WEB_SESSION_ID_LEN + 1];
        int r = web_cookie_get((const char *) data, size, "__Host-seatweb", out, sizeof(out));
        if (r == 0) {
                size_t n = strlen(out);
                for (size_t i = 0; i < n; i++)
                        if ((unsigned char) out[i] <= 0x20 || (unsigned char) out[i] >= 0x7f || out[i] == ';' || out[i] == ',')
                                abort();
                (void) web_session_id_valid(out);
        } else if (r != -ENOENT && r != -ENOTUNIQ && r != -EBADMSG && r != -E2BIG)
                abort();
        return 0;
}
