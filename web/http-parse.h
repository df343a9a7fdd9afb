/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What seat-web reads out of a request: form fields, cookies, the path's seat id. Pure
 * functions of a buffer with hard caps (fuzzed: tests/fuzz/fuzz-web-form.c and
 * fuzz-web-cookie.c). Every request is hostile until these say otherwise. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEB_FORM_MAX 4096        /* a login form's body */
#define WEB_COOKIE_HEADER_MAX 4096
#define WEB_SEAT_ID_MAX 31       /* seatd: "s" + 8 hex today; seatd checks it again */
#define WEB_TOKEN_HEX 64         /* seatd's participant token: 32 bytes, hex */
#define WEB_SESSION_ID_LEN 43    /* 32 random bytes, base64url without padding */

/*
 * The value of field key in an application/x-www-form-urlencoded body, decoded ('+' and
 * %XX) into out (NUL-terminated). -ENOENT: absent; -ENOTUNIQ: given twice; -EBADMSG: a bad
 * escape, a NUL or a control byte after decoding, an empty name, or a body over
 * WEB_FORM_MAX; -E2BIG: the value does not fit in out.
 */
int web_form_get(const char *body, size_t len, const char *key, char *out, size_t out_size);
/* The same, and with lines true CR, LF and TAB pass too (a textarea's: fac_form_get()). */
int web_form_field(const char *body, size_t len, const char *key, char *out, size_t out_size, bool lines);

/*
 * The value of cookie name in a Cookie header ("a=b; c=d"), copied to out. -ENOENT: absent;
 * -ENOTUNIQ: given twice (a cookie tossed in by a sibling host must not win by order);
 * -EBADMSG: malformed or over WEB_COOKIE_HEADER_MAX; -E2BIG: too long for out.
 */
int web_cookie_get(const char *header, size_t len, const char *name, char *out, size_t out_size);

/*
 * The credentials of an "Authorization: Bearer TOKEN" header (RFC 6750: the scheme in any
 * case, one or more spaces, a token68), copied to out. -ENOENT: another scheme;
 * -EBADMSG: malformed, or over WEB_COOKIE_HEADER_MAX; -E2BIG: too long for out.
 */
int web_bearer_get(const char *header, size_t len, char *out, size_t out_size);

/* A seat id as seatd makes them: 1..WEB_SEAT_ID_MAX of [a-z0-9-], starting with a letter. */
bool web_seat_id_valid(const char *s);
/* A participant token: exactly WEB_TOKEN_HEX lowercase hex digits. */
bool web_token_valid(const char *s);
/* A session id as seat-web makes them: WEB_SESSION_ID_LEN of base64url. */
bool web_session_id_valid(const char *s);

typedef enum WebRoute {
        WEB_ROUTE_NONE,
        WEB_ROUTE_LOGIN_PAGE,  /* GET / */
        WEB_ROUTE_LOGIN,       /* POST /login */
        WEB_ROUTE_LOGOUT,      /* POST /logout */
        WEB_ROUTE_SEAT_PAGE,   /* GET /seat/ID */
        WEB_ROUTE_SEAT_STATUS, /* GET /api/seat/ID/status */
        WEB_ROUTE_STATIC,      /* GET /static/NAME: one of the shipped assets */
        WEB_ROUTE_MCP,         /* POST, DELETE /mcp/ID: MCP over Streamable HTTP (mcp-http.c) */
        WEB_ROUTE_SEAT_TERMINAL, /* GET /ws/seat/ID/terminal: a WebSocket (terminal.c) */
        WEB_ROUTE_SEAT_FILE,   /* GET, POST /api/seat/ID/file: a chunk of a download or upload (files.c) */
        WEB_ROUTE_LINK,        /* GET /l/ID: a one-time login link (links.c); arg: ID */
        WEB_ROUTE_SEAT_FORWARD, /* /seat/ID/port/N/...: the seat's web pages (forward.c; web_forward_path) */
        WEB_ROUTE_FAC,         /* /facilitator/..., /metrics: the facilitator's side (fac-http.c) */
} WebRoute;

#define WEB_FILE_PATH_MAX 1024           /* a guest path a participant names */
#define WEB_FILE_CHUNK_MAX (512u * 1024u) /* one upload or download chunk: seatd's own cap */

/* A path in the guest as a participant may name it: absolute, 2..WEB_FILE_PATH_MAX bytes,
 * not ending in '/', printable ASCII or UTF-8 bytes (no control byte, no NUL), no "//"
 * and no "." or ".." component. The guest is the participant's own: this keeps the
 * request well-formed, seatd and the agent decide the rest. */
bool web_guest_path_valid(const char *s);
/* A decimal number 0..max with no sign, no spaces and at most 19 digits. -EINVAL, -ERANGE. */
int web_parse_u64(const char *s, uint64_t max, uint64_t *ret);

/* Maps a request path to a route; ret_arg gets the seat id or the asset's name (a static
 * string from the asset table, never the request's bytes). Query strings are not part of
 * path (libwebsockets keeps them apart). */
WebRoute web_route(const char *path, char *ret_arg, size_t arg_size, const char **ret_asset_mime);
