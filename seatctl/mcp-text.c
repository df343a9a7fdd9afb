/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Guest bytes as JSON text. What a tool prints is the guest's: any bytes at all. JSON
 * strings must be Unicode, and a client that meets invalid UTF-8 may reject the whole
 * message, so each bad byte becomes U+FFFD (the WHATWG decoder's rule, one per byte). */
#include <stdlib.h>
#include <string.h>

#include "mcp.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0. Overlongs, surrogates and code
 * points above U+10FFFF are invalid. */
static size_t utf8_seq(const uint8_t *s, size_t n) {
        uint8_t c = s[0];
        if (c < 0x80)
                return 1;
        size_t len;
        uint32_t min, cp;
        if ((c & 0xE0) == 0xC0)
                len = 2, min = 0x80, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
                len = 3, min = 0x800, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
                len = 4, min = 0x10000, cp = c & 0x07;
        else
                return 0;
        if (len > n)
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

bool mcp_text_is_utf8(const void *data, size_t len) {
        const uint8_t *s = data;
        for (size_t i = 0; i < len;) {
                size_t k = utf8_seq(s + i, len - i);
                if (k == 0 || s[i] == 0)
                        return false;
                i += k;
        }
        return true;
}

char *mcp_text_from_bytes(const void *data, size_t len, size_t max, size_t *ret_len) {
        const uint8_t *s = data;
        if (len > max)
                len = max;
        /* Worst case: every byte becomes the three bytes of U+FFFD. */
        char *out = malloc(len * 3 + 1);
        size_t o = 0;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t k = utf8_seq(s + i, len - i);
                if (k == 0 || s[i] == 0) {
                        /* NUL too: json-c's strings are C strings on the way out. */
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
