/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bytes.c: a bounded byte queue that grows by doubling (bytes.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "common/macro.h"

int bytes_append(Bytes *b, const void *data, size_t len, size_t max) {
        if (len == 0)
                return 0; /* (an empty WebSocket message; data may be NULL then) */
        if (len > max || b->len > max - len)
                return -ENOBUFS;
        if (b->len + len > b->cap) {
                size_t n = MAX(b->cap * 2, MAX(b->len + len, (size_t) 4096));
                uint8_t *p = realloc(b->data, MIN(n, max));
                if (!p)
                        return -ENOMEM;
                b->data = p;
                b->cap = MIN(n, max);
        }
        memcpy(b->data + b->len, data, len);
        b->len += len;
        return 0;
}

void bytes_take(Bytes *b, size_t n) {
        if (n == 0)
                return; /* (data may still be NULL: memmove must not see it) */
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
}

void bytes_clear(Bytes *b) {
        free(b->data);
        *b = (Bytes) {};
}
