/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "base64.h"
#include "macro.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_encoded_len(size_t n) {
        return (n / 3 + (n % 3 != 0)) * 4;
}

void base64_encode_to(const void *data, size_t len, char *o) {
        const uint8_t *p = data;

        size_t i = 0;
        for (; i + 3 <= len; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = alphabet[v >> 6 & 63];
                *o++ = alphabet[v & 63];
        }
        if (i < len) {
                uint32_t v = (uint32_t) p[i] << 16 | (i + 1 < len ? (uint32_t) p[i + 1] << 8 : 0);
                *o++ = alphabet[v >> 18 & 63];
                *o++ = alphabet[v >> 12 & 63];
                *o++ = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
                *o++ = '=';
        }
}

int base64_encode(const void *data, size_t len, char **ret, size_t *ret_len) {
        if (len > (SIZE_MAX / 4) * 3 - 3)
                return -E2BIG;
        size_t n = base64_encoded_len(len);
        char *out = malloc(n + 1);
        if (!out)
                return -ENOMEM;
        base64_encode_to(data, len, out);
        out[n] = '\0';
        *ret = out;
        if (ret_len)
                *ret_len = n;
        return 0;
}

static int decode_char(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *in, size_t len, size_t max_out, void **ret, size_t *ret_len) {
        if (len % 4 != 0)
                return -EINVAL;

        size_t pad = 0;
        if (len >= 1 && in[len - 1] == '=')
                pad++;
        if (len >= 2 && in[len - 2] == '=')
                pad++;
        size_t n = len / 4 * 3 - pad;
        if (n > max_out)
                return -E2BIG;

        _cleanup_free_ uint8_t *out = malloc(n + 1);
        uint8_t *o = out;
        if (!out)
                return -ENOMEM;

        for (size_t i = 0; i < len; i += 4) {
                bool last = i + 4 == len;
                int a = decode_char(in[i]), b = decode_char(in[i + 1]);
                int c = last && pad == 2 ? 0 : decode_char(in[i + 2]);
                int d = last && pad >= 1 ? 0 : decode_char(in[i + 3]);
                if (a < 0 || b < 0 || c < 0 || d < 0)
                        return -EINVAL;
                uint32_t v = (uint32_t) a << 18 | (uint32_t) b << 12 | (uint32_t) c << 6 | (uint32_t) d;
                if (last && pad == 2) {
                        if (v & 0xffff) /* non-canonical trailing bits */
                                return -EINVAL;
                        *o++ = (uint8_t) (v >> 16);
                } else if (last && pad == 1) {
                        if (v & 0xff)
                                return -EINVAL;
                        *o++ = (uint8_t) (v >> 16);
                        *o++ = (uint8_t) (v >> 8);
                } else {
                        *o++ = (uint8_t) (v >> 16);
                        *o++ = (uint8_t) (v >> 8);
                        *o++ = (uint8_t) v;
                }
        }
        *o = 0;
        *ret = TAKE_PTR(out);
        if (ret_len)
                *ret_len = n;
        return 0;
}
