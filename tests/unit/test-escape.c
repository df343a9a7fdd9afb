/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "escape.h"

/* Feed s in pieces of step bytes; returns what would be sent, and whether "~." ended it. */
static bool feed(const char *s, size_t step, char *sent, size_t sent_size) {
        EscapeState st = ESCAPE_STATE_INIT;
        size_t n = strlen(s), o = 0;
        for (size_t i = 0; i < n; i += step) {
                size_t k = n - i < step ? n - i : step, out_len = 0;
                uint8_t out[64];
                assert_true(k + 1 <= sizeof(out));
                int r = escape_feed(&st, (const uint8_t *) s + i, k, out, &out_len);
                assert_true(out_len <= k + 1);
                assert_true(o + out_len < sent_size);
                memcpy(sent + o, out, out_len);
                o += out_len;
                if (r > 0) {
                        sent[o] = '\0';
                        return true;
                }
        }
        sent[o] = '\0';
        return false;
}

static void check(const char *typed, const char *expect_sent, bool expect_detach) {
        /* The same whether it arrives at once or byte by byte. */
        for (size_t step = 1; step <= 8; step *= 2) {
                char sent[256];
                bool d = feed(typed, step, sent, sizeof(sent));
                if (d != expect_detach || strcmp(sent, expect_sent))
                        fail_msg("'%s' in steps of %zu: sent '%s' detach %d, expected '%s' detach %d", typed, step, sent, d,
                                 expect_sent, expect_detach);
        }
}

TEST(escape) {
        check("ls\r", "ls\r", false);
        check("~.", "", true);                     /* first of all */
        check("echo a\r~.rest", "echo a\r", true); /* after Enter; the rest is dropped */
        check("echo a\n~.", "echo a\n", true);
        check("a~.", "a~.", false);                /* not at a line's start */
        check("~~.", "~.", false);                 /* "~~" sends one '~', and the line goes on */
        check("~x", "~x", false);
        check("\r~\r~.", "\r~\r", true);           /* "~" then Enter: both sent, a new line */
        check("~", "", false);                     /* held until the next byte */
        check("cd ~\r", "cd ~\r", false);
}

TEST_MAIN("escape")
