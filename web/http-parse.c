/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "common/decimal.h"
#include "common/hex.h"
#include "http-parse.h"

/* Decode [s, s+n) into out (NULL: check only); -EBADMSG for a bad escape or a control
 * byte (but CR, LF and TAB when lines), -E2BIG. */
static int form_decode(const char *s, size_t n, char *out, size_t out_size, bool lines) {
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                int c = (unsigned char) s[i];
                if (c == '+')
                        c = ' ';
                else if (c == '%') {
                        if (i + 2 >= n)
                                return -EBADMSG;
                        int h = hex_digit_value(s[i + 1]), l = hex_digit_value(s[i + 2]);
                        if (h < 0 || l < 0)
                                return -EBADMSG;
                        c = h * 16 + l;
                        i += 2;
                }
                bool line_byte = lines && (c == '\n' || c == '\r' || c == '\t');
                if ((c < 0x20 && !line_byte) || c == 0x7f)
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

int web_form_field(const char *body, size_t len, const char *key, char *out, size_t out_size, bool lines) {
        bool found = false;
        size_t klen = strlen(key);

        if (len > WEB_FORM_MAX)
                return -EBADMSG;
        for (size_t off = 0; off <= len;) {
                const char *amp = memchr(body + off, '&', len - off);
                size_t n = amp ? (size_t) (amp - (body + off)) : len - off;
                const char *pair = body + off;
                if (n > 0) {
                        const char *eq = memchr(pair, '=', n);
                        size_t nlen = eq ? (size_t) (eq - pair) : n;
                        if (nlen == 0)
                                return -EBADMSG;
                        /* Names are compared raw: ours are plain words, an escaped name
                         * is nobody's field. */
                        bool ours = nlen == klen && memcmp(pair, key, klen) == 0;
                        if (ours && found)
                                return -ENOTUNIQ;
                        found = found || ours;
                        /* Every field must be well-formed, ours or not. */
                        int r = form_decode(eq ? eq + 1 : pair + n, eq ? n - nlen - 1 : 0, ours ? out : NULL, out_size, lines);
                        if (r < 0)
                                return r;
                }
                if (!amp)
                        break;
                off += n + 1;
        }
        return found ? 0 : -ENOENT;
}

int web_form_get(const char *body, size_t len, const char *key, char *out, size_t out_size) {
        return web_form_field(body, len, key, out, out_size, false);
}

/* RFC 6265 cookie-octet, plus what browsers let through in practice we refuse. */
static bool cookie_octet(unsigned char c) {
        return c == 0x21 || (c >= 0x23 && c <= 0x2b) || (c >= 0x2d && c <= 0x3a) || (c >= 0x3c && c <= 0x5b) ||
               (c >= 0x5d && c <= 0x7e);
}

int web_cookie_get(const char *header, size_t len, const char *name, char *out, size_t out_size) {
        bool found = false;
        size_t nlen_want = strlen(name);

        if (len > WEB_COOKIE_HEADER_MAX)
                return -EBADMSG;
        for (size_t off = 0; off < len;) {
                const char *semi = memchr(header + off, ';', len - off);
                size_t n = semi ? (size_t) (semi - (header + off)) : len - off;
                const char *p = header + off;
                while (n > 0 && (*p == ' ' || *p == '\t'))
                        p++, n--;
                while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                        n--;
                if (n > 0) {
                        const char *eq = memchr(p, '=', n);
                        if (!eq || eq == p)
                                return -EBADMSG;
                        size_t nlen = (size_t) (eq - p), vlen = n - nlen - 1;
                        const char *v = eq + 1;
                        if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"')
                                v++, vlen -= 2;
                        for (size_t i = 0; i < nlen; i++)
                                if ((unsigned char) p[i] <= 0x20 || (unsigned char) p[i] >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", p[i]))
                                        return -EBADMSG;
                        if (nlen == nlen_want && memcmp(p, name, nlen) == 0) {
                                if (found)
                                        return -ENOTUNIQ;
                                found = true;
                                for (size_t i = 0; i < vlen; i++)
                                        if (!cookie_octet((unsigned char) v[i]))
                                                return -EBADMSG;
                                if (vlen + 1 > out_size)
                                        return -E2BIG;
                                memcpy(out, v, vlen);
                                out[vlen] = '\0';
                        }
                }
                if (!semi)
                        break;
                off += (size_t) (semi - (header + off)) + 1;
        }
        return found ? 0 : -ENOENT;
}

bool web_seat_id_valid(const char *s) {
        size_t n = strlen(s);
        return n >= 1 && n <= WEB_SEAT_ID_MAX && s[0] >= 'a' && s[0] <= 'z' &&
               strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

bool web_token_valid(const char *s) {
        return strlen(s) == WEB_TOKEN_HEX && strspn(s, "0123456789abcdef") == WEB_TOKEN_HEX;
}

bool web_session_id_valid(const char *s) {
        return strlen(s) == WEB_SESSION_ID_LEN &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == WEB_SESSION_ID_LEN;
}

int web_bearer_get(const char *header, size_t len, char *out, size_t out_size) {
        size_t i = 0, start;
        if (out_size == 0 || len > WEB_COOKIE_HEADER_MAX)
                return -EBADMSG;
        if (len < 6 || strncasecmp(header, "Bearer", 6) != 0 || (len > 6 && header[6] != ' '))
                return len >= 6 && !strncasecmp(header, "Bearer", 6) && len == 6 ? -EBADMSG : -ENOENT;
        i = 6;
        while (i < len && header[i] == ' ')
                i++;
        start = i;
        /* token68: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/", then "=" padding. */
        while (i < len && header[i] && ((header[i] >= 'a' && header[i] <= 'z') || (header[i] >= 'A' && header[i] <= 'Z') ||
                                         (header[i] >= '0' && header[i] <= '9') || strchr("-._~+/", header[i])))
                i++;
        while (i < len && header[i] == '=')
                i++;
        size_t n = i - start;
        while (i < len && header[i] == ' ')
                i++;
        if (n == 0 || i != len)
                return -EBADMSG;
        if (n + 1 > out_size)
                return -E2BIG;
        memcpy(out, header + start, n);
        out[n] = '\0';
        return 0;
}

static const struct {
        const char *name;
        const char *mime;
} assets[] = {
        { "style.css", "text/css; charset=utf-8" },
        { "seat.js", "text/javascript; charset=utf-8" },
        /* the terminal: xterm.js, pinned in web/xterm/package-lock.json, shipped here */
        { "xterm.js", "text/javascript; charset=utf-8" },
        { "xterm.css", "text/css; charset=utf-8" },
        { "addon-fit.js", "text/javascript; charset=utf-8" },
        /* (pages: served by their routes only) */
        { "login.html", "text/html; charset=utf-8" },
        { "seat.html", "text/html; charset=utf-8" },
};
#define STATIC_ASSETS 5

WebRoute web_route(const char *path, char *ret_arg, size_t arg_size, const char **ret_asset_mime) {
        size_t n = strlen(path);
        if (arg_size == 0)
                return WEB_ROUTE_NONE;
        ret_arg[0] = '\0';
        if (n > 256)
                return WEB_ROUTE_NONE;
        if (!strcmp(path, "/"))
                return WEB_ROUTE_LOGIN_PAGE;
        if (!strcmp(path, "/login"))
                return WEB_ROUTE_LOGIN;
        if (!strcmp(path, "/logout"))
                return WEB_ROUTE_LOGOUT;
        if (!strncmp(path, "/l/", 3)) {
                /* A link's id: exactly a session id's shape (32 random bytes, base64url). */
                if (!web_session_id_valid(path + 3) || strlen(path + 3) + 1 > arg_size)
                        return WEB_ROUTE_NONE;
                strcpy(ret_arg, path + 3);
                return WEB_ROUTE_LINK;
        }
        if (!strncmp(path, "/static/", 8)) {
                /* Only the assets a page links to; the HTML pages are served by their
                 * routes. */
                for (size_t i = 0; i < STATIC_ASSETS; i++)
                        if (!strcmp(path + 8, assets[i].name)) {
                                if (strlen(assets[i].name) + 1 > arg_size)
                                        return WEB_ROUTE_NONE;
                                strcpy(ret_arg, assets[i].name);
                                if (ret_asset_mime)
                                        *ret_asset_mime = assets[i].mime;
                                return WEB_ROUTE_STATIC;
                        }
                return WEB_ROUTE_NONE;
        }
        const char *id = NULL, *rest = NULL;
        WebRoute route = WEB_ROUTE_NONE;
        if (!strncmp(path, "/seat/", 6)) {
                id = path + 6;
                rest = id + strlen(id);
                route = WEB_ROUTE_SEAT_PAGE;
        } else if (!strncmp(path, "/mcp/", 5)) {
                id = path + 5;
                rest = id + strlen(id);
                route = WEB_ROUTE_MCP;
        } else if (!strncmp(path, "/api/seat/", 10)) {
                id = path + 10;
                rest = strchr(id, '/');
                if (rest && !strcmp(rest, "/status"))
                        route = WEB_ROUTE_SEAT_STATUS;
                else if (rest && !strcmp(rest, "/file"))
                        route = WEB_ROUTE_SEAT_FILE;
                else
                        return WEB_ROUTE_NONE;
        } else if (!strncmp(path, "/ws/seat/", 9)) {
                id = path + 9;
                rest = strchr(id, '/');
                if (!rest || strcmp(rest, "/terminal") != 0)
                        return WEB_ROUTE_NONE;
                route = WEB_ROUTE_SEAT_TERMINAL;
        } else
                return WEB_ROUTE_NONE;
        size_t idlen = (size_t) (rest - id);
        if (idlen == 0 || idlen > WEB_SEAT_ID_MAX || idlen + 1 > arg_size)
                return WEB_ROUTE_NONE;
        memcpy(ret_arg, id, idlen);
        ret_arg[idlen] = '\0';
        if (!web_seat_id_valid(ret_arg)) {
                ret_arg[0] = '\0';
                return WEB_ROUTE_NONE;
        }
        return route;
}

bool web_guest_path_valid(const char *s) {
        size_t n = strnlen(s, WEB_FILE_PATH_MAX + 1);
        if (n < 2 || n > WEB_FILE_PATH_MAX || s[0] != '/' || s[n - 1] == '/')
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) s[i];
                if (ch < 0x20 || ch == 0x7f)
                        return false;
                if (ch == '/') {
                        /* the component that follows: not empty, not "." or ".." */
                        const char *c = s + i + 1;
                        size_t k = strcspn(c, "/");
                        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
                                return false;
                }
        }
        return true;
}

int web_parse_u64(const char *s, uint64_t max, uint64_t *ret) {
        size_t n = strnlen(s, 21);
        if (n > 19)
                return -ERANGE;
        uint64_t v;
        int r = decimal_parse(s, n, 19, &v);
        if (r < 0)
                return r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}
