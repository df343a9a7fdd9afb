/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

#include "error.h"

/*
 * The "key = value" files of seatd and seat-web: bounded (the whole text at most
 * max_bytes, a line shorter than max_line), no NUL byte, '#' comments and blank lines
 * skipped, blanks around key and value stripped. Each setting goes to fn with its line
 * number; fn says what is wrong through ret_error (prefixed "ORIGIN:LINE: " by the
 * caller's own messages). A line without '=' is refused here.
 */
typedef int (*ConfSettingFn)(const char *key, char *value, unsigned lineno, void *userdata, SeatError **ret_error);

int conf_file_parse(const char *text, size_t len, size_t max_bytes, size_t max_line, const char *origin,
                    ConfSettingFn fn, void *userdata, SeatError **ret_error);
