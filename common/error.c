/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "strprintf.h"

int seat_error_set(SeatError **ret_error, int errnum, const char *fmt, ...) {
        va_list ap;

        if (errnum <= 0)
                errnum = EIO;
        if (!ret_error || *ret_error)
                return -errnum;

        _cleanup_error_ SeatError *e = calloc(1, sizeof(*e));
        if (!e)
                return -errnum;
        va_start(ap, fmt);
        e->message = vstrprintf(fmt, ap);
        va_end(ap);
        if (!e->message)
                return -errnum;
        e->code = errnum;
        *ret_error = TAKE_PTR(e);
        return -errnum;
}

int seat_error_wrap(SeatError **ret_error, const char *fmt, ...) {
        va_list ap;

        if (!ret_error || !*ret_error)
                return -EIO;

        SeatError *e = *ret_error;
        va_start(ap, fmt);
        _cleanup_free_ char *context = vstrprintf(fmt, ap);
        va_end(ap);
        if (!context)
                return -e->code;

        char *joined = NULL;
        if (asprintf(&joined, "%s: %s", context, e->message) < 0)
                return -e->code;
        free(e->message);
        e->message = joined;
        return -e->code;
}

SeatError *seat_error_free(SeatError *e) {
        if (!e)
                return NULL;
        free(e->message);
        return mfree(e);
}
