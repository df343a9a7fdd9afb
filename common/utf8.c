/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* utf8.c: guest bytes made valid UTF-8 (see utf8.h). */
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static size_t lead_length(uint8_t c, uint32_t *ret_min, uint32_t *ret_bits) {
        if (c < 0x80)
                return *ret_min = 0, *ret_bits = c, 1;
        if ((c & 0xE0) == 0xC0)
                return *ret_min = 0x80, *ret_bits = c & 0x1F, 2;
        if ((c & 0xF0) == 0xE0)
                return *ret_min = 0x800, *ret_bits = c & 0x0F, 3;
        if ((c & 0xF8) == 0xF0)
                return *ret_min = 0x10000, *ret_bits = c & 0x07, 4;
        return 0;
}

size_t utf8_sequence(const uint8_t *s, size_t n) {
        uint32_t min, cp;
        size_t len = n > 0 ? lead_length(s[0], &min, &cp) : 0;
        if (len == 0 || len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return len;
}

bool utf8_is_valid(const void *data, size_t len) {
        const uint8_t *s = data;
        for (size_t i = 0; i < len;) {
                size_t k = utf8_sequence(s + i, len - i);
                if (k == 0 || s[i] == 0)
                        return false;
                i += k;
        }
        return true;
}

size_t utf8_pending_tail(const void *data, size_t len) {
        const uint8_t *s = data;
        /* A lead byte within the last three, all after it continuation bytes, fewer than it
         * needs. (Whether the whole would be valid is decided when it is complete.) */
        for (size_t back = 1; back <= 3 && back <= len; back++) {
                uint8_t c = s[len - back];
                if ((c & 0xC0) == 0x80)
                        continue;
                uint32_t min, bits;
                size_t need = lead_length(c, &min, &bits);
                return need > back ? back : 0;
        }
        return 0;
}

char *utf8_from_bytes(const void *data, size_t len, size_t max, size_t *ret_len) {
        const uint8_t *s = data;
        if (len > max)
                len = max;
        /* Worst case: every byte becomes the three bytes of U+FFFD. */
        char *out = malloc(len * 3 + 1);
        size_t o = 0;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t k = utf8_sequence(s + i, len - i);
                if (k == 0 || s[i] == 0) {
                        memcpy(out + o, "\xEF\xBF\xBD", 3);
                        o += 3;
                        i++;
                        continue;
                }
                memcpy(out + o, s + i, k);
                o += k;
                i += k;
        }
        out[o] = '\0';
        if (ret_len)
                *ret_len = o;
        return out;
}

size_t utf8_cut(const char *s, size_t len, size_t max) {
        if (len <= max)
                return len;
        size_t n = max;
        while (n > 0 && ((uint8_t) s[n] & 0xC0) == 0x80)
                n--;
        return n;
}
