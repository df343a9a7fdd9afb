/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "fac-parse.h"

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Decode [s, s+n) into out (out NULL: check only). */
static int decode(const char *s, size_t n, char *out, size_t out_size) {
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                int c = (unsigned char) s[i];
                if (c == '+')
                        c = ' ';
                else if (c == '%') {
                        if (i + 2 >= n)
                                return -EBADMSG;
                        int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
                        if (h < 0 || l < 0)
                                return -EBADMSG;
                        c = h * 16 + l;
                        i += 2;
                }
                if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f)
                        return -EBADMSG;
                if (out) {
                        if (o + 1 >= out_size)
                                return -E2BIG;
                        out[o++] = (char) c;
                }
        }
        if (out) {
                if (out_size == 0)
                        return -E2BIG;
                out[o] = '\0';
        }
        return 0;
}

int fac_form_get(const char *body, size_t len, const char *key, char *out, size_t out_size) {
        size_t klen = strlen(key);
        bool found = false;
        if (len > WEB_FORM_MAX)
                return -EBADMSG;
        for (size_t off = 0; off <= len;) {
                const char *amp = memchr(body + off, '&', len - off);
                size_t n = amp ? (size_t) (amp - (body + off)) : len - off;
                const char *pair = body + off;
                if (n > 0) {
                        const char *eq = memchr(pair, '=', n);
                        size_t nlen = eq ? (size_t) (eq - pair) : n;
                        const char *v = eq ? eq + 1 : pair + n;
                        size_t vlen = eq ? n - nlen - 1 : 0;
                        if (nlen == 0)
                                return -EBADMSG;
                        bool ours = nlen == klen && memcmp(pair, key, klen) == 0;
                        if (ours && found)
                                return -ENOTUNIQ;
                        found = found || ours;
                        /* Every field must be well-formed, ours or not. */
                        int r = decode(v, vlen, ours ? out : NULL, out_size);
                        if (r < 0)
                                return r;
                }
                if (!amp)
                        break;
                off += n + 1;
        }
        return found ? 0 : -ENOENT;
}

int fac_csrf_get(const char *header, size_t len, char out[FAC_CSRF_LEN + 1]) {
        size_t a = 0, b = len;
        if (len > 256)
                return -EBADMSG;
        while (a < b && (header[a] == ' ' || header[a] == '\t'))
                a++;
        while (b > a && (header[b - 1] == ' ' || header[b - 1] == '\t'))
                b--;
        if (b - a != FAC_CSRF_LEN)
                return -EBADMSG;
        memcpy(out, header + a, FAC_CSRF_LEN);
        out[FAC_CSRF_LEN] = '\0';
        if (!web_session_id_valid(out)) {
                out[0] = '\0';
                return -EBADMSG;
        }
        return 0;
}

bool fac_participant_valid(const char *s) {
        size_t n = strlen(s);
        return n > 0 && n <= FAC_PARTICIPANT_MAX && s[0] != ' ' && s[n - 1] != ' ' &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+- ") == n;
}

int fac_names_parse(const char *text, size_t len, char names[][FAC_PARTICIPANT_MAX + 1], size_t *ret_n) {
        const char *p = text, *end = text + len;
        size_t n = 0;
        if (len > WEB_FORM_MAX)
                return -EBADMSG;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *a = p, *b = nl ? nl : end;
                p = nl ? nl + 1 : end;
                while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
                        a++;
                while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
                        b--;
                if (a == b)
                        continue;
                if (n >= FAC_HANDOUT_MAX)
                        return -E2BIG;
                if ((size_t) (b - a) > FAC_PARTICIPANT_MAX)
                        return -EBADMSG;
                memcpy(names[n], a, (size_t) (b - a));
                names[n][b - a] = '\0';
                if (!fac_participant_valid(names[n]))
                        return -EBADMSG;
                for (size_t i = 0; i < n; i++)
                        if (!strcmp(names[i], names[n]))
                                return -EBADMSG;
                n++;
        }
        *ret_n = n;
        return 0;
}
