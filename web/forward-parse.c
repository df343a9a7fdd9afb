/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* forward-parse.c: the reverse proxy's pure parsers (forward-parse.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/decimal.h"
#include "forward-parse.h"

static int parse_port(const char *s, size_t n, unsigned *ret) {
        uint64_t v;
        if (n == 0 || s[0] == '0' || decimal_parse(s, n, 5, &v) < 0 || v < 1 || v > 65535)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int web_forward_path(const char *path, char *ret_seat, size_t seat_size, unsigned *ret_port, const char **ret_rest) {
        if (strncmp(path, "/seat/", 6) != 0)
                return -ENOENT;
        const char *id = path + 6, *slash = strchr(id, '/');
        if (!slash || strncmp(slash, "/port/", 6) != 0)
                return -ENOENT;
        size_t idlen = (size_t) (slash - id);
        if (strnlen(path, WEB_FORWARD_PATH_MAX + 1) > WEB_FORWARD_PATH_MAX || idlen == 0 || idlen > WEB_SEAT_ID_MAX ||
            idlen + 1 > seat_size)
                return -EINVAL;
        memcpy(ret_seat, id, idlen);
        ret_seat[idlen] = '\0';
        if (!web_seat_id_valid(ret_seat))
                return -EINVAL;
        const char *p = slash + 6, *rest = p + strcspn(p, "/");
        if (parse_port(p, (size_t) (rest - p), ret_port) < 0)
                return -EINVAL;
        for (const char *q = rest; *q; q++)
                if ((unsigned char) *q < 0x20 || *q == 0x7f)
                        return -EINVAL;
        *ret_rest = rest;
        return 0;
}

int web_forward_ports_parse(const char *s, uint16_t ret_ports[WEB_FORWARD_PORTS_MAX], size_t *ret_n) {
        size_t n = 0;
        if (!strcmp(s, "none")) {
                *ret_n = 0;
                return 0;
        }
        for (const char *p = s;;) {
                p += strspn(p, " \t");
                size_t k = strcspn(p, ", \t");
                unsigned port;
                if (parse_port(p, k, &port) < 0 || n == WEB_FORWARD_PORTS_MAX)
                        return -EINVAL;
                for (size_t i = 0; i < n; i++)
                        if (ret_ports[i] == port)
                                return -EINVAL;
                ret_ports[n++] = (uint16_t) port;
                p += k;
                p += strspn(p, " \t");
                if (!*p)
                        break;
                if (*p++ != ',')
                        return -EINVAL;
        }
        *ret_n = n;
        return 0;
}

int web_forward_cookie_strip(const char *header, size_t len, const char *drop, char *out, size_t out_size) {
        size_t o = 0, dlen = strlen(drop);
        if (len > WEB_COOKIE_HEADER_MAX || out_size == 0)
                return len > WEB_COOKIE_HEADER_MAX ? -EBADMSG : -E2BIG;
        for (size_t off = 0; off < len;) {
                const char *semi = memchr(header + off, ';', len - off);
                size_t end = semi ? (size_t) (semi - header) : len;
                size_t a = off, b = end;
                while (a < b && (header[a] == ' ' || header[a] == '\t'))
                        a++;
                while (b > a && (header[b - 1] == ' ' || header[b - 1] == '\t'))
                        b--;
                for (size_t i = a; i < b; i++)
                        if ((unsigned char) header[i] < 0x20 || header[i] == 0x7f)
                                return -EBADMSG;
                if (b > a) {
                        const char *eq = memchr(header + a, '=', b - a);
                        size_t nlen = eq ? (size_t) (eq - (header + a)) : b - a;
                        /* (a name that only differs in case is another cookie to a browser,
                         * but a server might fold it: dropped too) */
                        bool ours = nlen == dlen && strncasecmp(header + a, drop, dlen) == 0;
                        /* Every __Host-/__Secure- cookie is seat-web's: the facilitator's
                         * session too (its Path is /, so the browser sends it here), and a
                         * guest can never set one (web_forward_set_cookie refuses them). */
                        ours = ours || (nlen >= 7 && strncasecmp(header + a, "__Host-", 7) == 0) ||
                               (nlen >= 9 && strncasecmp(header + a, "__Secure-", 9) == 0);
                        if (!ours) {
                                size_t need = (o ? 2 : 0) + (b - a);
                                if (o + need + 1 > out_size)
                                        return -E2BIG;
                                if (o) {
                                        out[o++] = ';';
                                        out[o++] = ' ';
                                }
                                memcpy(out + o, header + a, b - a);
                                o += b - a;
                        }
                }
                off = end + 1;
        }
        out[o] = '\0';
        return 0;
}

int web_forward_url_encode(const char *in, bool query, char *out, size_t out_size) {
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *) in; *p; p++) {
                bool raw = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                           strchr("-._~!$'()*,;:@+", *p) || *p == '/' || (query && (*p == '=' || *p == '?'));
                if (o + (raw ? 1 : 3) + 1 > out_size)
                        return -E2BIG;
                if (raw)
                        out[o++] = (char) *p;
                else {
                        out[o++] = '%';
                        out[o++] = hex[*p >> 4];
                        out[o++] = hex[*p & 15];
                }
        }
        if (out_size == 0)
                return -E2BIG;
        out[o] = '\0';
        return 0;
}

static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool name_is(const WebForwardHeader *h, const char *name) {
        return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/* A Content-Length value: digits only, at most 15 of them (a petabyte: more is a lie). */
static int parse_length(const char *v, size_t n, int64_t *ret) {
        uint64_t x;
        if (decimal_parse(v, n, 15, &x) < 0)
                return -EBADMSG;
        *ret = (int64_t) x;
        return 0;
}

int web_forward_response_parse(const char *buf, size_t len, WebForwardResponse *r) {
        memset(r, 0, sizeof(*r));
        r->content_length = -1;
        size_t scan = len < WEB_FORWARD_HEAD_MAX ? len : WEB_FORWARD_HEAD_MAX;
        size_t off = 0;
        for (unsigned line = 0;; line++) {
                const char *nl = memchr(buf + off, '\n', scan - off);
                if (!nl)
                        return len >= WEB_FORWARD_HEAD_MAX ? -E2BIG : -EAGAIN;
                size_t end = (size_t) (nl - buf), n = end - off;
                if (n == 0 || buf[end - 1] != '\r')
                        return -EBADMSG; /* lines end in CRLF, nothing else */
                n--;
                const char *s = buf + off;
                off = end + 1;
                for (size_t i = 0; i < n; i++)
                        if (((unsigned char) s[i] < 0x20 && s[i] != '\t') || s[i] == 0x7f)
                                return -EBADMSG;
                if (line == 0) {
                        /* "HTTP/1.x NNN[ reason]" */
                        if (n < 12 || strncmp(s, "HTTP/1.", 7) != 0 || (s[7] != '0' && s[7] != '1') || s[8] != ' ' ||
                            s[9] < '2' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9' ||
                            (n > 12 && s[12] != ' '))
                                return -EBADMSG;
                        r->status = (unsigned) ((s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0'));
                        continue;
                }
                if (n == 0) {
                        r->head_len = off;
                        return 0;
                }
                if (s[0] == ' ' || s[0] == '\t')
                        return -EBADMSG; /* obsolete line folding */
                const char *colon = memchr(s, ':', n);
                if (!colon || colon == s)
                        return -EBADMSG;
                for (const char *c = s; c < colon; c++)
                        if (!is_tchar(*c))
                                return -EBADMSG;
                if (r->n_headers == WEB_FORWARD_HEADERS_MAX)
                        return -E2BIG;
                WebForwardHeader *h = &r->headers[r->n_headers++];
                h->name = s;
                h->name_len = (size_t) (colon - s);
                const char *v = colon + 1, *ve = s + n;
                while (v < ve && (*v == ' ' || *v == '\t'))
                        v++;
                while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                        ve--;
                h->value = v;
                h->value_len = (size_t) (ve - v);
                if (name_is(h, "content-length")) {
                        int64_t cl;
                        if (parse_length(h->value, h->value_len, &cl) < 0 ||
                            (r->content_length >= 0 && r->content_length != cl))
                                return -EBADMSG;
                        r->content_length = cl;
                } else if (name_is(h, "transfer-encoding"))
                        r->chunked = true;
        }
}

bool web_forward_response_header_allowed(const char *name, size_t len) {
        /* What a web page needs to render and a form to work; not the guest's say on CORS,
         * framing, HSTS or anything about seat-web's origin, and no WWW-Authenticate (a
         * password prompt under seat-web's name, for the facilitator's password). Set-Cookie and Location are
         * rewritten by their own functions first. */
        static const char *const keep[] = {
                "content-type", "content-disposition", "content-language", "content-encoding", "last-modified",
                "etag", "expires", "vary", "location", "set-cookie",
        };
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
                if (len == strlen(keep[i]) && strncasecmp(name, keep[i], len) == 0)
                        return true;
        return false;
}

int web_forward_set_cookie(const char *value, size_t len, const char *prefix, char *out, size_t out_size) {
        size_t o = 0;
        const char *semi = memchr(value, ';', len);
        size_t first = semi ? (size_t) (semi - value) : len;
        const char *eq = memchr(value, '=', first);
        if (!eq || eq == value || len > WEB_COOKIE_HEADER_MAX)
                return -EPERM;
        size_t nlen = (size_t) (eq - value);
        for (size_t i = 0; i < nlen; i++)
                if (!is_tchar(value[i]))
                        return -EPERM;
        /* The browser treats these prefixes case-insensitively (RFC 6265bis). */
        if ((nlen >= 7 && strncasecmp(value, "__Host-", 7) == 0) || (nlen >= 9 && strncasecmp(value, "__Secure-", 9) == 0))
                return -EPERM;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) value[i] < 0x20 || value[i] == 0x7f)
                        return -EPERM;
        if (first + 1 > out_size)
                return -E2BIG;
        memcpy(out, value, first);
        o = first;
        /* The attributes, but Path and Domain (ours replace them). */
        for (size_t off = first; off < len;) {
                size_t a = off + 1;
                const char *next = memchr(value + a, ';', len - a);
                size_t b = next ? (size_t) (next - value) : len;
                size_t s = a;
                while (s < b && value[s] == ' ')
                        s++;
                size_t k = b - s;
                bool drop = (k >= 4 && strncasecmp(value + s, "path", 4) == 0 && (k == 4 || value[s + 4] == '=' || value[s + 4] == ' ')) ||
                            (k >= 6 && strncasecmp(value + s, "domain", 6) == 0 && (k == 6 || value[s + 6] == '=' || value[s + 6] == ' ')) ||
                            k == 0;
                if (!drop) {
                        if (o + 2 + k + 1 > out_size)
                                return -E2BIG;
                        out[o++] = ';';
                        out[o++] = ' ';
                        memcpy(out + o, value + s, k);
                        o += k;
                }
                off = b;
        }
        int n = snprintf(out + o, out_size - o, "; Path=%s/", prefix);
        if (n < 0 || (size_t) n >= out_size - o)
                return -E2BIG;
        return 0;
}

int web_forward_location(const char *value, size_t len, const char *prefix, const char *host, unsigned port,
                         char *out, size_t out_size) {
        const char *path = NULL;
        size_t plen = 0;
        /* (a browser reads '\\' as '/': "\\\\evil" and "//evil" are another site) */
        for (size_t i = 0; i < len; i++)
                if ((unsigned char) value[i] <= 0x20 || value[i] == 0x7f || value[i] == '\\')
                        return -EPERM;
        if (len >= 2 && value[0] == '/' && value[1] == '/')
                return -EPERM;
        if (len >= 1 && value[0] == '/') {
                path = value;
                plen = len;
        } else if (memchr(value, ':', len) == NULL || (memchr(value, '/', len) && (const char *) memchr(value, '/', len) < (const char *) memchr(value, ':', len))) {
                /* relative: no scheme (a ':' only after a '/') */
                if (len + 1 > out_size)
                        return -E2BIG;
                memcpy(out, value, len);
                out[len] = '\0';
                return 0;
        } else {
                /* http://HOST[:PORT] followed by nothing or a path: the guest's own target only. */
                char own[300];
                bool v6 = strchr(host, ':');
                for (int s = 0; s < 2 && !path; s++) {
                        if (s == 1 && port != 80)
                                break;
                        int n = s == 0 ? snprintf(own, sizeof(own), "http://%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", port)
                                       : snprintf(own, sizeof(own), "http://%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
                        size_t k = (size_t) n;
                        if (n > 0 && k <= len && strncasecmp(value, own, k) == 0 && (k == len || value[k] == '/')) {
                                path = k == len ? "/" : value + k;
                                plen = k == len ? 1 : len - k;
                        }
                }
                if (!path)
                        return -EPERM;
        }
        int n = snprintf(out, out_size, "%s%.*s", prefix, (int) plen, path);
        if (n < 0 || (size_t) n >= out_size)
                return -E2BIG;
        return 0;
}

int web_ws_frame_parse(const uint8_t *buf, size_t len, size_t max_payload, WebWsFrame *f) {
        if (len < 2)
                return -EAGAIN;
        unsigned op = buf[0] & 0x0f;
        bool fin = buf[0] & 0x80;
        if ((buf[0] & 0x70) || (buf[1] & 0x80))
                return -EBADMSG; /* no extension was agreed; a server does not mask */
        if (op != WEB_WS_OP_CONT && op != WEB_WS_OP_TEXT && op != WEB_WS_OP_BINARY && op != WEB_WS_OP_CLOSE &&
            op != WEB_WS_OP_PING && op != WEB_WS_OP_PONG)
                return -EBADMSG;
        uint64_t n = buf[1] & 0x7f;
        size_t h = 2;
        if (n == 126) {
                if (len < 4)
                        return -EAGAIN;
                n = ((uint64_t) buf[2] << 8) | buf[3];
                h = 4;
                if (n < 126)
                        return -EBADMSG;
        } else if (n == 127) {
                if (len < 10)
                        return -EAGAIN;
                if (buf[2] & 0x80)
                        return -EBADMSG;
                n = 0;
                for (int i = 2; i < 10; i++)
                        n = (n << 8) | buf[i];
                h = 10;
                if (n <= 0xffff)
                        return -EBADMSG;
        }
        if ((op & 0x8) && (n > 125 || !fin))
                return -EBADMSG;
        if (n > max_payload)
                return -E2BIG;
        if (len - h < n)
                return -EAGAIN;
        *f = (WebWsFrame) { .fin = fin, .opcode = op, .payload = buf + h, .payload_len = (size_t) n,
                            .frame_len = h + (size_t) n };
        return 0;
}

size_t web_ws_frame_header(uint8_t out[14], unsigned opcode, bool fin, uint64_t payload_len, const uint8_t mask[4]) {
        size_t h = 2;
        out[0] = (uint8_t) ((fin ? 0x80 : 0) | (opcode & 0x0f));
        if (payload_len < 126)
                out[1] = (uint8_t) (0x80 | payload_len);
        else if (payload_len <= 0xffff) {
                out[1] = 0x80 | 126;
                out[2] = (uint8_t) (payload_len >> 8);
                out[3] = (uint8_t) payload_len;
                h = 4;
        } else {
                out[1] = 0x80 | 127;
                for (int i = 0; i < 8; i++)
                        out[2 + i] = (uint8_t) (payload_len >> (56 - 8 * i));
                h = 10;
        }
        memcpy(out + h, mask, 4);
        return h + 4;
}

void web_ws_mask(uint8_t *data, size_t len, const uint8_t mask[4], size_t offset) {
        for (size_t i = 0; i < len; i++)
                data[i] ^= mask[(offset + i) & 3];
}

static const WebForwardHeader *find_header(const WebForwardResponse *r, const char *name) {
        for (size_t i = 0; i < r->n_headers; i++)
                if (name_is(&r->headers[i], name))
                        return &r->headers[i];
        return NULL;
}

int web_ws_upgrade_parse(const char *buf, size_t len, const char *accept, size_t *ret_head_len) {
        /* The response parser takes 200..599 only: read a 101's head as a 200's. */
        char line[16];
        if (len < 13)
                return memcmp(buf, "HTTP/1.1 101 ", len < 13 ? len : 13) == 0 ? -EAGAIN : -EPROTO;
        if (memcmp(buf, "HTTP/1.1 101", 12) != 0 || (buf[12] != ' ' && buf[12] != '\r'))
                return -EPROTO;
        WebForwardResponse *r = malloc(sizeof(*r));
        char *copy = malloc(len);
        if (!r || !copy) {
                free(r);
                free(copy);
                return -ENOMEM;
        }
        memcpy(copy, buf, len);
        memcpy(line, "HTTP/1.1 200", 12);
        memcpy(copy, line, 12);
        int k = web_forward_response_parse(copy, len, r);
        if (k == 0) {
                const WebForwardHeader *up = find_header(r, "upgrade"), *acc = find_header(r, "sec-websocket-accept");
                if (!up || up->value_len != 9 || strncasecmp(up->value, "websocket", 9) != 0 || !acc ||
                    acc->value_len != strlen(accept) || memcmp(acc->value, accept, acc->value_len) != 0 ||
                    find_header(r, "sec-websocket-extensions"))
                        k = -EPROTO;
                else
                        *ret_head_len = r->head_len;
        }
        free(r);
        free(copy);
        return k;
}
