/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "log.h"

static LogLevel max_level = LOG_LEVEL_INFO;
static const char *log_ident = "seatd";
static int log_fd = STDERR_FILENO;
static bool kmsg_format = false;
/* Whether log_fd is journald's stream: -1 until the first line after log_set_fd() looks. */
static int journal_stream = -1;

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
        __atomic_store_n(&journal_stream, -1, __ATOMIC_RELAXED);
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

int log_level_from_string(const char *s, LogLevel *ret) {
        for (LogLevel l = LOG_LEVEL_ERR; l <= LOG_LEVEL_DEBUG; l++)
                if (!strcmp(s, level_word(l))) {
                        *ret = l;
                        return 0;
                }
        return -EINVAL;
}

int log_level_from_string_syslog(const char *s, LogLevel *ret) {
        if (strcmp(s, "err") == 0) {
                *ret = LOG_LEVEL_ERR;
                return 0;
        }
        return log_level_from_string(s, ret);
}

/*
 * systemd sets $JOURNAL_STREAM to "DEV:INODE" of the socket it connected a service's
 * stdout/stderr to. The variable is inherited by children whose stderr may point elsewhere
 * (a terminal, a file), so only an fd with that very device and inode is journald's;
 * systemd's own log.c compares the same way.
 */
static bool fd_is_journal_stream(int fd) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        char *end;

        if (!e || !*e)
                return false;
        errno = 0;
        dev = strtoull(e, &end, 10);
        if (errno != 0 || end == e || *end != ':')
                return false;
        e = end + 1;
        ino = strtoull(e, &end, 10);
        if (errno != 0 || end == e || *end != '\0')
                return false;
        if (fstat(fd, &st) < 0)
                return false;
        return (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino;
}

/* Looked at once per fd, on the first line: threads may race here, both find the same. */
static bool log_to_journal(void) {
        int j = __atomic_load_n(&journal_stream, __ATOMIC_RELAXED);
        if (j < 0) {
                j = fd_is_journal_stream(log_fd);
                __atomic_store_n(&journal_stream, j, __ATOMIC_RELAXED);
        }
        return j > 0;
}

int log_internal(LogLevel level, int errnum, const char *fmt, ...) {
        int saved = errno;
        char line[2048];
        int n;
        /* "<N>" is what kmsg and journald read as the line's priority (sd-daemon(3)); the
         * level word would only repeat it. (Before errno is set: the check touches it.) */
        bool priority_prefix = kmsg_format || log_to_journal();

        if (errnum < 0)
                errnum = -errnum;
        errno = errnum; /* so %m names it */

        if (priority_prefix)
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
