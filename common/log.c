/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "log.h"

static LogLevel max_level = LOG_LEVEL_INFO;
static const char *log_ident = "seatd";
static int log_fd = STDERR_FILENO;
static bool kmsg_format = false;

void log_set_max_level(LogLevel level) {
        max_level = level;
}

LogLevel log_get_max_level(void) {
        return max_level;
}

void log_set_ident(const char *ident) {
        log_ident = ident ? ident : "seatd";
}

void log_set_fd(int fd) {
        log_fd = fd;
}

void log_set_kmsg_format(bool on) {
        kmsg_format = on;
}

static const char *level_word(LogLevel level) {
        switch (level) {
        case LOG_LEVEL_ERR:
                return "error";
        case LOG_LEVEL_WARNING:
                return "warning";
        case LOG_LEVEL_NOTICE:
                return "notice";
        case LOG_LEVEL_INFO:
                return "info";
        case LOG_LEVEL_DEBUG:
        default:
                return "debug";
        }
}

int log_internal(LogLevel level, int errnum, const char *fmt, ...) {
        int saved = errno;
        char line[2048];
        int n;

        if (errnum < 0)
                errnum = -errnum;
        errno = errnum; /* so %m names it */

        if (kmsg_format)
                n = snprintf(line, sizeof(line), "<%d>%s: ", (int) level, log_ident);
        else
                n = snprintf(line, sizeof(line), "%s: %s: ", log_ident, level_word(level));
        if (n < 0 || (size_t) n >= sizeof(line))
                n = 0;

        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t) n - 1, fmt, ap);
        va_end(ap);
        size_t len = (size_t) n + (m < 0 ? 0 : MIN((size_t) m, sizeof(line) - (size_t) n - 2));
        line[len++] = '\n';

        /* One write per line: lines from several processes do not interleave. */
        (void) !write(log_fd, line, len);

        errno = saved;
        return errnum > 0 ? -errnum : 0;
}

char *log_escape(const void *data, size_t len, size_t max_out) {
        const unsigned char *p = data;
        size_t cap = MIN(len, max_out) * 4 + 4, o = 0;
        char *out = malloc(cap + 1);

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = p[i];
                char tmp[5];
                size_t k;

                if (c == '\\' || c == '"') {
                        tmp[0] = '\\';
                        tmp[1] = (char) c;
                        k = 2;
                } else if (c >= 0x20 && c < 0x7f) {
                        tmp[0] = (char) c;
                        k = 1;
                } else {
                        static const char hex[] = "0123456789abcdef";
                        tmp[0] = '\\';
                        tmp[1] = 'x';
                        tmp[2] = hex[c >> 4];
                        tmp[3] = hex[c & 15];
                        k = 4;
                }
                if (o + k > max_out) {
                        memcpy(out + o, "...", 3);
                        o += 3;
                        break;
                }
                memcpy(out + o, tmp, k);
                o += k;
        }
        out[o] = '\0';
        return out;
}
