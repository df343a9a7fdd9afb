/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A DNS message's names read at every offset of the first 512 bytes by read_name (the DNS
 * guard's, guest-probe's): whatever it reads must end past where it started, within the
 * message, and be at most name_max long; anything else aborts. */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void fuzz_dns_names(const uint8_t *data, size_t size, size_t name_max,
                                  int (*read_name)(const uint8_t *m, size_t n, size_t *off, char *out)) {
        char *name = malloc(name_max + 1); /* exactly the parser's bound: ASan sees one byte past it */
        if (!name)
                abort();
        for (size_t off = 0; off < size && off < 512; off++) {
                size_t o = off;
                if (read_name(data, size, &o, name) < 0)
                        continue;
                if (o <= off || o > size || strlen(name) > name_max)
                        abort();
        }
        free(name);
}
