/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The value of s[0..n): 1 to max_digits (at most 19) ASCII digits and nothing else, no
 * sign, no blank, no NUL needed after them; -EINVAL otherwise. Each caller keeps its own
 * range and its own errno: a port (web/forward-parse.c, seatctl/forward-spec.c), a
 * Content-Length (web/forward-parse.c), a query's number (web/http-parse.c). */
int decimal_parse(const char *s, size_t n, size_t max_digits, uint64_t *ret);
