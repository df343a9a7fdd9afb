/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "common/log.h"

/*
 * A log line about one seat starts with "seat=ID": `grep 'seat=s1a2b3c4 '` (or
 * `journalctl -u seatd -g ...`) then finds all that happened to that seat, whichever
 * message it was and wherever the message names it. The message after it is unchanged:
 * tests and operators grep those words. ID is never NULL.
 */
#define log_seat_full_errno(level, e, id, fmt, ...) log_full_errno(level, e, "seat=%s " fmt, (id), ##__VA_ARGS__)
#define log_seat_debug(id, fmt, ...) log_seat_full_errno(LOG_LEVEL_DEBUG, 0, id, fmt, ##__VA_ARGS__)
#define log_seat_info(id, fmt, ...) log_seat_full_errno(LOG_LEVEL_INFO, 0, id, fmt, ##__VA_ARGS__)
#define log_seat_notice(id, fmt, ...) log_seat_full_errno(LOG_LEVEL_NOTICE, 0, id, fmt, ##__VA_ARGS__)
#define log_seat_warning(id, fmt, ...) log_seat_full_errno(LOG_LEVEL_WARNING, 0, id, fmt, ##__VA_ARGS__)
#define log_seat_error(id, fmt, ...) log_seat_full_errno(LOG_LEVEL_ERR, 0, id, fmt, ##__VA_ARGS__)
