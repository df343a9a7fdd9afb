/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
