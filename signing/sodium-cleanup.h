/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sodium.h>

#include "common/macro.h"

/* _cleanup_sodium_ uint8_t *key = sodium_malloc(n): a secret buffer that is wiped and unmapped
 * on every return (sodium_free(NULL) is fine). */
static inline void sodium_freep(void *p) {
        void **pp = p;
        sodium_free(*pp);
        *pp = NULL;
}
#define _cleanup_sodium_ _cleanup_(sodium_freep)
