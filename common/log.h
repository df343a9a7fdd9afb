/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Daemons and tools log; library code returns errors and logs at debug at most. */
typedef enum LogLevel {
        LOG_LEVEL_ERR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_NOTICE = 5,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
} LogLevel;

/* The words a --log-level option takes (as printed before each line: "error", "warning",
 * "notice", "info", "debug"), parsed in one place for every binary. 0 or -EINVAL. */
int log_level_from_string(const char *s, LogLevel *ret);
/* Those words and syslog's "err" as well: what guest-init and seat-web document. */
int log_level_from_string_syslog(const char *s, LogLevel *ret);
void log_set_max_level(LogLevel level);
LogLevel log_get_max_level(void);
/* "seatd", "guest-init", …: printed before every line. */
void log_set_ident(const char *ident);
/* Where lines go: an fd (default 2). guest-init as PID 1 points this at /dev/kmsg. */
void log_set_fd(int fd);
/* Prefix lines with "<N>" (kmsg/syslog priority) instead of a level word. Also done
 * without asking when that fd is journald's stream ($JOURNAL_STREAM names its device and
 * inode: systemd connected it), so the journal records each line's priority. */
void log_set_kmsg_format(bool on);

/* Returns -errnum when errnum != 0, so `return log_error_errno(r, "...")` works. */
int log_internal(LogLevel level, int errnum, const char *fmt, ...) _printf_(3, 4);

#define log_full_errno(level, e, ...)                                                   \
        ({                                                                             \
                LogLevel _l_ = (level);                                                \
                int _e_ = (e);                                                         \
                _l_ <= log_get_max_level() ? log_internal(_l_, _e_, __VA_ARGS__)       \
                                           : (_e_ > 0 ? -_e_ : _e_);                   \
        })
#define log_debug(...) log_full_errno(LOG_LEVEL_DEBUG, 0, __VA_ARGS__)
#define log_info(...) log_full_errno(LOG_LEVEL_INFO, 0, __VA_ARGS__)
#define log_notice(...) log_full_errno(LOG_LEVEL_NOTICE, 0, __VA_ARGS__)
#define log_warning(...) log_full_errno(LOG_LEVEL_WARNING, 0, __VA_ARGS__)
#define log_error(...) log_full_errno(LOG_LEVEL_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...) log_full_errno(LOG_LEVEL_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_LEVEL_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_LEVEL_ERR, (e), __VA_ARGS__)

/*
 * Escape untrusted bytes for a log line or a terminal: printable ASCII stays, '\\' and
 * '"' are escaped, everything else becomes \xNN; at most max_out bytes of output (then
 * "..." is appended). Returns a new string or NULL on ENOMEM.
 */
char *log_escape(const void *data, size_t len, size_t max_out);
