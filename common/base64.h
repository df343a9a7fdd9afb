/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* RFC 4648 standard alphabet with '=' padding. */
size_t base64_encoded_len(size_t n); /* without the NUL */
/* Returns 0 and a NUL-terminated string, or -ENOMEM/-E2BIG (overflow). */
int base64_encode(const void *data, size_t len, char **ret, size_t *ret_len);
/* Encode into out, which has room for base64_encoded_len(len) bytes (no NUL written). */
void base64_encode_to(const void *data, size_t len, char *out);
/* Strict: no whitespace, padding required, non-canonical trailing bits refused.
 * Refuses (-E2BIG) input that would decode to more than max_out bytes.
 * Returns 0 and a malloc'd buffer (NUL-terminated for convenience, not counted), or
 * -EINVAL on bad input. */
int base64_decode(const char *in, size_t len, size_t max_out, void **ret, size_t *ret_len);
