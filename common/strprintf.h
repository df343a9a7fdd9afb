/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdarg.h>

#include "macro.h"

/* A newly allocated formatted string, or NULL when out of memory: vasprintf() leaves its
 * pointer undefined on failure, so every caller otherwise repeats the same guard. */
char *strprintf(const char *fmt, ...) _printf_(1, 2);
char *vstrprintf(const char *fmt, va_list ap) _printf_(1, 0);
