/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web's reverse proxy: what a hostile guest answers (the status line and headers), and
 * what each of its headers becomes (Set-Cookie, Location), plus the browser's Cookie header
 * and the proxied path. Any bytes give a parse within its caps or a refusal, and nothing
 * that comes out can carry a line break, a "__Host-" cookie or a path outside the prefix.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "forward-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_line_break(const char *s) {
        if (strpbrk(s, "\r\n"))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *prefix = "/seat/s1/port/8080";
        WebForwardResponse r;
        int k = web_forward_response_parse((const char *) data, size, &r);
        if (k == 0) {
                if (r.head_len > size || r.head_len > WEB_FORWARD_HEAD_MAX || r.status < 200 || r.status > 599 ||
                    r.n_headers > WEB_FORWARD_HEADERS_MAX)
                        abort();
                for (size_t i = 0; i < r.n_headers; i++) {
                        const WebForwardHeader *h = &r.headers[i];
                        if (h->name < (const char *) data || h->value + h->value_len > (const char *) data + r.head_len ||
                            memchr(h->value, '\n', h->value_len) || memchr(h->value, '\r', h->value_len))
                                abort();
                        char out[WEB_COOKIE_HEADER_MAX + 256];
                        if (web_forward_set_cookie(h->value, h->value_len, prefix, out, sizeof(out)) == 0) {
                                no_line_break(out);
                                if (!strncasecmp(out, "__Host-", 7) || !strncasecmp(out, "__Secure-", 9) ||
                                    !strstr(out, "; Path=/seat/s1/port/8080/"))
                                        abort();
                        }
                        if (web_forward_location(h->value, h->value_len, prefix, "127.0.0.1", 8080, out, sizeof(out)) == 0) {
                                no_line_break(out);
                                /* under the prefix, or relative: no scheme (a ':' only after a '/') */
                                const char *colon = strchr(out, ':'), *slash = strchr(out, '/');
                                if (strstr(out, "//") == out || strchr(out, '\\'))
                                        abort();
                                if (out[0] == '/' && strncmp(out, prefix, strlen(prefix)) != 0)
                                        abort();
                                if (out[0] != '/' && colon && (!slash || colon < slash))
                                        abort();
                        }
                }
        } else if (k != -EAGAIN && k != -E2BIG && k != -EBADMSG)
                abort();

        /* The same bytes as a browser's Cookie header and as a proxied path. */
        char text[WEB_FORWARD_PATH_MAX + 1], out[WEB_COOKIE_HEADER_MAX + 1];
        size_t n = size < WEB_FORWARD_PATH_MAX ? size : WEB_FORWARD_PATH_MAX;
        memcpy(text, data, n);
        text[n] = '\0';
        if (web_forward_cookie_strip((const char *) data, size, "__Host-seatweb", out, sizeof(out)) == 0) {
                no_line_break(out);
                if (strcasestr(out, "__Host-seatweb=") == out || strcasestr(out, "; __Host-seatweb="))
                        abort();
        }
        char seat[WEB_SEAT_ID_MAX + 1], enc[WEB_FORWARD_PATH_MAX * 3 + 1];
        unsigned port;
        const char *rest;
        if (web_forward_path(text, seat, sizeof(seat), &port, &rest) == 0) {
                if (port < 1 || port > 65535 || !web_seat_id_valid(seat) || (*rest && *rest != '/'))
                        abort();
                if (web_forward_url_encode(rest, false, enc, sizeof(enc)) == 0 && strpbrk(enc, " ?#\r\n"))
                        abort();
        }
        /* and as WebSocket frames from the guest, one after another, and its upgrade answer */
        for (size_t off = 0; off < size;) {
                WebWsFrame fr;
                if (web_ws_frame_parse(data + off, size - off, 4096, &fr) != 0)
                        break;
                if (fr.frame_len == 0 || fr.frame_len > size - off || fr.payload_len > 4096 ||
                    fr.payload + fr.payload_len != data + off + fr.frame_len)
                        abort();
                off += fr.frame_len;
        }
        size_t head;
        if (web_ws_upgrade_parse((const char *) data, size, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", &head) == 0 && head > size)
                abort();
        uint16_t ports[WEB_FORWARD_PORTS_MAX];
        size_t np;
        if (web_forward_ports_parse(text, ports, &np) == 0 && np > WEB_FORWARD_PORTS_MAX)
                abort();
        return 0;
}
