/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "decimal.h"

int decimal_parse(const char *s, size_t n, size_t max_digits, uint64_t *ret) {
        uint64_t v = 0;
        if (n == 0 || n > max_digits || n > 19) /* 19 digits fit a uint64_t, 20 may not */
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t) (s[i] - '0');
        }
        *ret = v;
        return 0;
}
