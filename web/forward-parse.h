/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The reverse proxy's parsers (forward.c, docs/seat-web.md "The seat's web pages"): the
 * proxied path, the configured port list, what of a browser's request goes to the guest
 * and what of the guest's response comes back. The guest is hostile: its response is read
 * only by these pure functions of a buffer, with caps (fuzzed: fuzz-web-forward.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http-parse.h"

#define WEB_FORWARD_PORTS_MAX 16
#define WEB_FORWARD_PATH_MAX 2048     /* a proxied request's path (and query) */
#define WEB_FORWARD_HEAD_MAX 16384    /* the guest's status line and headers, and ours to it */
#define WEB_FORWARD_HEADERS_MAX 64    /* header lines in the guest's response */
#define WEB_FORWARD_PREFIX_MAX (sizeof("/seat//port/65535") + WEB_SEAT_ID_MAX)

/*
 * "/seat/ID/port/N" followed by nothing or by "/..." (the path the guest gets, in
 * *ret_rest; "" when nothing followed: the caller redirects to the prefix with a '/').
 * -ENOENT: not a proxied path; -EINVAL: one with a bad seat id, port or length.
 */
int web_forward_path(const char *path, char *ret_seat, size_t seat_size, unsigned *ret_port, const char **ret_rest);

/* "80, 8080" (1..WEB_FORWARD_PORTS_MAX distinct ports 1..65535) or "none". -EINVAL. */
int web_forward_ports_parse(const char *s, uint16_t ret_ports[WEB_FORWARD_PORTS_MAX], size_t *ret_n);

/*
 * A Cookie header without the cookie named drop (seat-web's session must never reach the
 * guest), into out ("" when nothing is left). -EBADMSG: malformed or over
 * WEB_COOKIE_HEADER_MAX; -E2BIG: out too small.
 */
int web_forward_cookie_strip(const char *header, size_t len, const char *drop, char *out, size_t out_size);

/* Percent-encode what an HTTP request target may not carry raw (libwebsockets hands the path
 * and each query argument decoded). '/' stays; in a query argument (query) the '=' too, and
 * a '&' is encoded (the caller joins the arguments with '&'). -E2BIG. */
int web_forward_url_encode(const char *in, bool query, char *out, size_t out_size);

typedef struct WebForwardHeader {
        const char *name, *value; /* into the parsed buffer, not NUL-terminated */
        size_t name_len, value_len;
} WebForwardHeader;

typedef struct WebForwardResponse {
        unsigned status;          /* 200..599 */
        size_t head_len;          /* bytes of the status line and headers, with the blank line */
        int64_t content_length;   /* -1: none (the body ends with the connection) */
        bool chunked;             /* Transfer-Encoding was sent (seat-web refuses it) */
        size_t n_headers;
        WebForwardHeader headers[WEB_FORWARD_HEADERS_MAX];
} WebForwardResponse;

/*
 * The guest's status line and headers at the start of buf. 0: complete (r->head_len says
 * where the body starts); -EAGAIN: incomplete, more may come; -E2BIG: no end within
 * WEB_FORWARD_HEAD_MAX or more than WEB_FORWARD_HEADERS_MAX lines; -EBADMSG: anything
 * that is not "HTTP/1.x NNN reason" and "Name: value" lines (a control byte, a bare CR,
 * obsolete line folding, two Content-Lengths that differ, a status outside 200..599).
 */
int web_forward_response_parse(const char *buf, size_t len, WebForwardResponse *r);

/* The response headers passed on to the browser (case-insensitive names); everything else
 * of the guest's is dropped (CORS, security policies, hop-by-hop, Set-Cookie unless
 * web_forward_set_cookie keeps it, …). */
bool web_forward_response_header_allowed(const char *name, size_t len);

/*
 * A guest's Set-Cookie scoped to the proxied prefix: its own Path and Domain attributes
 * dropped, "; Path=PREFIX/" appended, so it reaches only this port's pages. -EPERM: dropped
 * whole (a "__Host-" or "__Secure-" name, which could stand in for seat-web's session
 * cookie, or a malformed one); -E2BIG.
 */
int web_forward_set_cookie(const char *value, size_t len, const char *prefix, char *out, size_t out_size);

/*
 * A guest's Location: relative ("x", "../x") kept; root-relative ("/x") and absolute
 * URLs to the guest's own target (http://HOST[:PORT]/x) put under the prefix; anything
 * else (another site) -EPERM: dropped. -E2BIG.
 */
int web_forward_location(const char *value, size_t len, const char *prefix, const char *host, unsigned port,
                         char *out, size_t out_size);

/* ---- WebSockets through the proxy (ws-forward.c): seat-web is the guest's WebSocket
 * client, so frames from the guest come unmasked and ours go masked (RFC 6455). */
#define WEB_WS_OP_CONT 0x0
#define WEB_WS_OP_TEXT 0x1
#define WEB_WS_OP_BINARY 0x2
#define WEB_WS_OP_CLOSE 0x8
#define WEB_WS_OP_PING 0x9
#define WEB_WS_OP_PONG 0xa

typedef struct WebWsFrame {
        bool fin;
        unsigned opcode;
        const uint8_t *payload; /* into the parsed buffer */
        size_t payload_len;
        size_t frame_len;       /* header and payload: where the next frame starts */
} WebWsFrame;

/*
 * One frame from the guest at the start of buf. 0: complete; -EAGAIN: more bytes needed;
 * -E2BIG: a payload over max_payload; -EBADMSG: reserved bits, an unknown opcode, a masked
 * frame (a server must not mask), a control frame over 125 bytes or fragmented, or a length
 * not in its shortest form's range.
 */
int web_ws_frame_parse(const uint8_t *buf, size_t len, size_t max_payload, WebWsFrame *f);
/* A frame's header, masked with mask, into out (2..14 bytes, its length returned); the
 * caller masks the payload with web_ws_mask. */
size_t web_ws_frame_header(uint8_t out[14], unsigned opcode, bool fin, uint64_t payload_len, const uint8_t mask[4]);
void web_ws_mask(uint8_t *data, size_t len, const uint8_t mask[4], size_t offset);
/*
 * The guest's answer to our upgrade at the start of buf: "HTTP/1.1 101" with Upgrade:
 * websocket and Sec-WebSocket-Accept equal to accept (what our key gives). 0 with
 * *ret_head_len; -EAGAIN incomplete; -E2BIG; -EBADMSG malformed; -EPROTO a well-formed
 * answer that is not this upgrade (another status, a wrong accept).
 */
int web_ws_upgrade_parse(const char *buf, size_t len, const char *accept, size_t *ret_head_len);
