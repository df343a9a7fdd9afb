/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "unit-cases.h"

void unit_check_str_cases(UnitStrFn fn, const UnitStrCase *cases, size_t n, size_t size) {
        for (size_t i = 0; i < n; i++) {
                const UnitStrCase *c = &cases[i];
                char out[UNIT_STR_OUT_MAX];
                size_t sz = c->size ? c->size : size;
                assert_true(sz <= sizeof(out));
                int r = fn(c->in, c->arg, out, sz);
                if (r != c->ret)
                        fail_msg("case %zu '%s': returned %d, not %d", i, c->in, r, c->ret);
                if (r == 0 && strcmp(out, c->want) != 0)
                        fail_msg("case %zu '%s': wrote '%s', not '%s'", i, c->in, out, c->want);
        }
}

static char *repeat(const char *head, const char *elem, size_t count_or_len, bool by_count, const char *tail) {
        size_t hl = strlen(head), el = strlen(elem), tl = strlen(tail), n = hl, k = 0;
        size_t len = by_count ? hl + count_or_len * (el + 1) + tl + 1 : count_or_len;
        char *s = malloc(len + el + tl + 2);
        assert_non_null(s);
        memcpy(s, head, hl);
        while (by_count ? k < count_or_len : n + el + 1 + tl < len) {
                if (k++)
                        s[n++] = ',';
                memcpy(s + n, elem, el);
                n += el;
        }
        memcpy(s + n, tail, tl + 1);
        return s;
}

char *unit_repeat_count(const char *head, const char *elem, size_t count, const char *tail) {
        return repeat(head, elem, count, true, tail);
}

char *unit_repeat_len(const char *head, const char *elem, size_t len, const char *tail) {
        return repeat(head, elem, len, false, tail);
}
