/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's login form: any body is decoded within its caps or refused, never overrun;
 * a decoded value holds no control byte. The same bytes as a route, as a file chunk's
 * guest path and offset. */
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
        if ((route == WEB_ROUTE_SEAT_PAGE || route == WEB_ROUTE_SEAT_STATUS || route == WEB_ROUTE_SEAT_FILE) &&
            !web_seat_id_valid(arg))
                abort();
        /* A path it accepts is absolute, bounded, and has no '..' component or control byte. */
        if (web_guest_path_valid(path)) {
                size_t len = strlen(path);
                if (path[0] != '/' || len > WEB_FILE_PATH_MAX || strstr(path, "/../") || strstr(path, "//") ||
                    (len >= 3 && !strcmp(path + len - 3, "/..")))
                        abort();
                for (size_t i = 0; i < len; i++)
                        if ((unsigned char) path[i] < 0x20 || path[i] == 0x7f)
                                abort();
        }
        uint64_t v;
        int k = web_parse_u64(path, 524288, &v);
        if ((k == 0 && v > 524288) || (k < 0 && k != -EINVAL && k != -ERANGE))
                abort();
        if (route == WEB_ROUTE_STATIC && (!mime || strchr(arg, '/')))
                abort();
        return 0;
}
