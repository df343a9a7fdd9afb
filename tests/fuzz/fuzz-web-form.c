/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's login form: any body is decoded within its caps or refused, never overrun;
 * a decoded value holds no control byte. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const keys[] = { "seat", "token", "x" };
        for (size_t k = 0; k < 3; k++) {
                char out[80];
                int r = web_form_get((const char *) data, size, keys[k], out, sizeof(out));
                if (r == 0) {
                        size_t n = strlen(out);
                        if (n >= sizeof(out))
                                abort();
                        for (size_t i = 0; i < n; i++)
                                if ((unsigned char) out[i] < 0x20 || out[i] == 0x7f)
                                        abort();
                } else if (r != -ENOENT && r != -ENOTUNIQ && r != -EBADMSG && r != -E2BIG)
                        abort();
        }
        /* The route table on the same bytes as a path. */
        char path[300], arg[64];
        size_t n = size < sizeof(path) - 1 ? size : sizeof(path) - 1;
        memcpy(path, data, n);
        path[n] = '\0';
        const char *mime = NULL;
        WebRoute route = web_route(path, arg, sizeof(arg), &mime);
        if ((route == WEB_ROUTE_SEAT_PAGE || route == WEB_ROUTE_SEAT_STATUS) && !web_seat_id_valid(arg))
                abort();
        if (route == WEB_ROUTE_STATIC && (!mime || strchr(arg, '/')))
                abort();
        return 0;
}
