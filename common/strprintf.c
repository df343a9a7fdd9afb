/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "strprintf.h"

char *vstrprintf(const char *fmt, va_list ap) {
        char *s = NULL;
        if (vasprintf(&s, fmt, ap) < 0)
                return NULL;
        return s;
}

char *strprintf(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = vstrprintf(fmt, ap);
        va_end(ap);
        return s;
}
