/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "escape.h"

int escape_feed(EscapeState *st, const uint8_t *in, size_t n, uint8_t *out, size_t *ret_out_len) {
        size_t o = 0;

        for (size_t i = 0; i < n; i++) {
                uint8_t b = in[i];
                if (st->tilde) {
                        st->tilde = false;
                        if (b == '.') {
                                *ret_out_len = o;
                                return 1;
                        }
                        if (b != '~')
                                out[o++] = '~';
                        out[o++] = b;
                        /* "~~" leaves the line going; anything else may end it. */
                        st->line_start = b == '\r' || b == '\n';
                        continue;
                }
                if (st->line_start && b == '~') {
                        st->tilde = true;
                        continue;
                }
                out[o++] = b;
                st->line_start = b == '\r' || b == '\n';
        }
        *ret_out_len = o;
        return 0;
}
