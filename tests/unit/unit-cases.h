/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Table-driven tests of a function that writes a string into a buffer: an array of cases
 * and one call of unit_check_str_cases(). Needs <cmocka.h> included first. */

#include <stddef.h>

#define UNIT_STR_OUT_MAX 512

typedef struct UnitStrCase {
        const char *in;
        const char *arg;  /* the function's second string (a field's or cookie's name), or NULL */
        int ret;          /* what it returns */
        const char *want; /* what it wrote, when ret is 0 */
        size_t size;      /* the buffer it gets; 0: the table's own size */
} UnitStrCase;

typedef int (*UnitStrFn)(const char *in, const char *arg, char *out, size_t size);

/* Each case: fn's return, and on 0 its output; a failure names the case. size: the buffer
 * where a case says none (at most UNIT_STR_OUT_MAX). */
void unit_check_str_cases(UnitStrFn fn, const UnitStrCase *cases, size_t n, size_t size);

/* Large inputs: head, then elem repeated (comma-separated), then tail; a malloc()ed string.
 * unit_repeat_count() repeats elem count times, unit_repeat_len() until the whole is about
 * len bytes (at most len - 1). */
char *unit_repeat_count(const char *head, const char *elem, size_t count, const char *tail);
char *unit_repeat_len(const char *head, const char *elem, size_t len, const char *tail);
