/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The line reader shared by seatd.conf and seat-web.conf: each has its own table of keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"
#include "macro.h"

static char *strip(char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
                s[--n] = '\0';
        return s;
}

int conf_file_parse(const char *text, size_t len, size_t max_bytes, size_t max_line, const char *origin,
                    ConfSettingFn fn, void *userdata, SeatError **ret_error) {
        unsigned lineno = 0;
        if (len > max_bytes)
                return seat_error_set(ret_error, EFBIG, "%s: larger than %zu bytes", origin, max_bytes);
        if (memchr(text, '\0', len))
                return seat_error_set(ret_error, EINVAL, "%s: contains a NUL byte", origin);
        _cleanup_free_ char *line = malloc(max_line);
        if (!line)
                return -ENOMEM;
        for (size_t off = 0; off < len;) {
                const char *nl = memchr(text + off, '\n', len - off);
                size_t n = nl ? (size_t) (nl - (text + off)) : len - off;
                lineno++;
                if (n >= max_line)
                        return seat_error_set(ret_error, EINVAL, "%s:%u: line longer than %zu bytes", origin, lineno, max_line - 1);
                memcpy(line, text + off, n);
                line[n] = '\0';
                off += n + 1;
                char *s = strip(line);
                if (!*s || *s == '#')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq)
                        return seat_error_set(ret_error, EINVAL, "%s:%u: expected 'key = value'", origin, lineno);
                *eq = '\0';
                int r = fn(strip(s), strip(eq + 1), lineno, userdata, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
