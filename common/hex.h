/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The value (0..15) of one hex digit, either case, or -EINVAL. Shared by the digest parser
 * (signing/hash.c) and the form decoder's %XX escapes (web/http-parse.c). */
int hex_digit_value(char c);
