/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/decimal.h"
#include "forward-spec.h"

#define FIELDS_MAX 4

/* One field: a bracketed one ("[::1]") may hold colons, any other ends at the next one.
 * Returns the bytes consumed (with the ':' after it), or -EINVAL. */
static int field(const char *s, const char **ret, size_t *ret_len, bool *ret_bracketed) {
        if (*s == '[') {
                const char *e = strchr(s, ']');
                if (!e || (e[1] != ':' && e[1] != '\0'))
                        return -EINVAL;
                *ret = s + 1;
                *ret_len = (size_t) (e - s - 1);
                *ret_bracketed = true;
                return (int) (e - s) + 1 + (e[1] == ':');
        }
        const char *e = strchr(s, ':');
        size_t n = e ? (size_t) (e - s) : strlen(s);
        *ret = s;
        *ret_len = n;
        *ret_bracketed = false;
        return (int) n + (e ? 1 : 0);
}

static int port(const char *s, size_t n, unsigned min, uint16_t *ret) {
        uint64_t v;
        if (decimal_parse(s, n, 5, &v) < 0 || v < min || v > 65535)
                return -EINVAL;
        *ret = (uint16_t) v;
        return 0;
}

static bool host_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
               c == '_' || c == ':';
}

int forward_spec_parse(const char *s, ForwardSpec *ret, const char **ret_why) {
        const char *f[FIELDS_MAX];
        size_t len[FIELDS_MAX];
        bool br[FIELDS_MAX];
        unsigned n = 0;
        ForwardSpec spec = {};
        const char *why = NULL;

        if (!s || !*s)
                why = "empty";
        for (const char *p = s; !why && p && *p;) {
                if (n == FIELDS_MAX) {
                        why = "too many ':'-separated fields (write an IPv6 address in brackets)";
                        break;
                }
                int k = field(p, &f[n], &len[n], &br[n]);
                if (k < 0) {
                        why = "an unclosed '[' or text after ']'";
                        break;
                }
                n++;
                p += k;
                if (k > 0 && p[-1] == ':' && !*p)
                        why = "ends with ':'";
        }
        if (!why && n != 3 && n != 4)
                why = "expected [ADDR:]LPORT:GUEST_HOST:GPORT";
        unsigned i = 0;
        if (!why && n == 4) {
                if (len[0] == 0 || len[0] >= sizeof(spec.bind))
                        why = "ADDR must be a local address";
                else {
                        memcpy(spec.bind, f[0], len[0]);
                        unsigned char buf[16];
                        if (!strcmp(spec.bind, "localhost"))
                                strcpy(spec.bind, "127.0.0.1");
                        else if (inet_pton(AF_INET, spec.bind, buf) != 1 && inet_pton(AF_INET6, spec.bind, buf) != 1)
                                why = "ADDR must be an IPv4 or IPv6 address (IPv6 in brackets) or localhost";
                        else if (!br[0] && strchr(spec.bind, ':'))
                                why = "write an IPv6 ADDR in brackets";
                }
                i = 1;
        } else if (!why)
                strcpy(spec.bind, "127.0.0.1");
        if (!why && port(f[i], len[i], 0, &spec.lport) < 0)
                why = "LPORT must be a port number, 0..65535 (0: any free port)";
        if (!why) {
                if (len[i + 1] == 0 || len[i + 1] > FORWARD_SPEC_HOST_MAX)
                        why = "GUEST_HOST must be 1..253 characters";
                else {
                        for (size_t j = 0; j < len[i + 1] && !why; j++)
                                if (!host_char(f[i + 1][j]))
                                        why = "GUEST_HOST may hold letters, digits and '.-_:' only";
                        if (!why && !br[i + 1] && memchr(f[i + 1], ':', len[i + 1]))
                                why = "write an IPv6 GUEST_HOST in brackets";
                        if (!why)
                                memcpy(spec.host, f[i + 1], len[i + 1]);
                }
        }
        if (!why && port(f[i + 2], len[i + 2], 1, &spec.gport) < 0)
                why = "GPORT must be a port number, 1..65535";
        if (why) {
                if (ret_why)
                        *ret_why = why;
                return -EINVAL;
        }
        *ret = spec;
        return 0;
}
