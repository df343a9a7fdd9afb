/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macro.h"

/*
 * The error a person reads. Functions that can fail for a reason a person must act on
 * take `SeatError **ret_error` as their last argument (NULL allowed) and return -errno.
 * The message quotes the value it is about and says what to do. Context is added on the
 * way up with seat_error_wrap(): "provision seat 's1': create overlay '/x': No space".
 */
typedef struct SeatError {
        int code;      /* positive errno */
        char *message; /* never NULL once set */
} SeatError;

/* Sets *ret_error (if ret_error and !*ret_error) and returns -errnum (errnum > 0). */
int seat_error_set(SeatError **ret_error, int errnum, const char *fmt, ...) _printf_(3, 4);
/* Prefixes "<context>: " to an existing error; returns -(*ret_error)->code, or -EIO. */
int seat_error_wrap(SeatError **ret_error, const char *fmt, ...) _printf_(2, 3);
SeatError *seat_error_free(SeatError *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(SeatError *, seat_error_free)
#define _cleanup_error_ _cleanup_(seat_error_freep)
