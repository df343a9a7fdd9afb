/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What server.c shares with mcp-http.c: the server's state, one connection's state, and
 * the helpers that answer a request. Loop thread only. */

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "http-parse.h"
#include "jobs.h"
#include "login-limit.h"
#include "ratelimit.h"
#include "session.h"

/* The facilitator's session cookie (fac-http.c). Path=/, as __Host- requires: the browser
 * sends it with a seat's forwarded pages too (forward.c keeps it from them). */
#define WEB_FAC_COOKIE "__Host-seatfac"
#define WEB_PARTICIPANT_COOKIE "__Host-seatweb"

typedef struct McpTable McpTable;
typedef struct McpSession McpSession;
typedef struct TermConn TermConn;
typedef struct WsProxy WsProxy;
typedef struct Fac Fac;

typedef struct Asset {
        const char *name;
        const char *mime;
        char *data;
        size_t len;
} Asset;

typedef struct Web {
        const WebConfig *conf;
        SessionTable *sessions;
        RateLimit *per_address, *per_seat;
        RateLimit *mcp_unauthenticated; /* MCP requests without a bearer token, per address */
        Asset assets[7];
        Jobs *jobs;
        Jobs *fwd_jobs;      /* proxied exchanges with the seats' servers (forward.c) */
        McpTable *mcp;
        TermConn *terms;     /* open browser terminals (ws-terminal.c) */
        Fac *fac;            /* the facilitator's side (fac-http.c) */
        size_t n_terms;
        WsProxy *wsp;        /* WebSockets relayed to the seats' servers (ws-proxy.c) */
        size_t n_wsp;
        bool tls;
} Web;

/* One HTTP connection's state (libwebsockets allocates it zeroed, per connection). */
typedef struct Conn {
        WebRoute route;
        char arg[64];
        char body[WEB_FORM_MAX + 1];
        size_t body_len;
        unsigned char *resp; /* LWS_PRE + resp_len */
        size_t resp_len;
        Job *job;            /* a seatd call running for this request */
        LoginCharge login;   /* a login's charge, until its answer is in (login-limit.h) */

        /* POST /mcp/SEAT (mcp-http.c) */
        struct lws *wsi;
        char *mbody;         /* the JSON-RPC message, up to its Content-Length */
        size_t mbody_len, mbody_want;
        char bearer[WEB_TOKEN_HEX + 1];
        char mcp_id[WEB_SESSION_ID_LEN + 1]; /* the Mcp-Session-Id sent, or "" (initialize) */
        McpSession *mcp;     /* the session whose response this stream waits for */
        struct Conn *mcp_next;
        int mkind;           /* the message's McpKind */
        char id_key[300];    /* the request's id (mcp_id_key); of a cancellation: the request it cancels */
        char id_json[400];   /* the request's id as JSON */
        char progress_key[300]; /* its progress token, or "" */
        char *out;           /* SSE bytes to write */
        size_t out_len, out_off;
        bool out_last;       /* the response is in out: close after it */
        bool out_closing;    /* all of it written: close when libwebsockets has sent it */

        /* /api/seat/ID/file (files.c): the chunk asked for, an upload's body */
        char fpath[WEB_FILE_PATH_MAX + 1];
        uint64_t foffset;
        bool ffinal;
        unsigned char *fbody;
        size_t fbody_len, fbody_want;

        /* /seat/ID/port/N/... (forward.c): the request to the guest, head then body */
        struct ForwardReq *fwd;
        /* a WebSocket under /seat/ID/port/N/ on this connection (ws-proxy.c) */
        WsProxy *wsp;
        /* the facilitator's side (fac-http.c): its route, an archive's name, and a
         * download's next chunk */
        int fac_route;
        char fac_arg[160];
        unsigned char *fac_chunk; /* LWS_PRE + fac_chunk_len */
        size_t fac_chunk_len;
        uint64_t fac_offset, fac_size;
        bool fac_eof;
} Conn;

/* A request body's next n bytes into buf (want bytes in all, *len so far): -1 when buf is
 * NULL or they are more than its Content-Length said (the caller closes), else 0. */
int web_body_append(void *buf, size_t want, size_t *len, const void *in, size_t n);
/* Headers, then the body on the next writable callback. */
int web_respond(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *ctype, const char *body, size_t len,
                const char *set_cookie, const char *location);
int web_respond_text(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *text);
int web_respond_json(struct lws *wsi, Web *w, Conn *c, unsigned status, json_object *o, const char *set_cookie);
/* {"error": message} with status, as the pages' scripts show a failure. */
int web_respond_error_json(struct lws *wsi, Web *w, Conn *c, unsigned status, const char *message);
/* The client's address as the rate limits key it. */
void web_peer_key(struct lws *wsi, char *out, size_t size);
void web_log_refusal(struct lws *wsi, const char *what, const char *seat);
/* Hand a seatd call to the workers; the request is finished when it is answered. */
int web_submit(struct lws *wsi, Web *w, Conn *c, Job *job);
/* A login's seatd call refused its token (it keeps its charge); any other outcome, seatd
 * not reached included, tried nothing. */
bool web_login_failed(const Job *job);
/* The session a finished seatd call was for: 0 with *ret; -ENOENT when it ended meanwhile;
 * -EACCES when seatd refused its token (the seat was reset or released): the session is
 * closed here. */
int web_job_session(Web *w, const Job *job, WebSession **ret);
/* The live session the request's cookie names, or NULL. */
WebSession *web_request_session(struct lws *wsi, Web *w);
/* The request's cookie name into out, as web_cookie_get() says (-ENOENT: no such cookie or
 * no Cookie header; -EBADMSG also for a header over WEB_COOKIE_HEADER_MAX). */
int web_request_cookie(struct lws *wsi, const char *name, char *out, size_t size);
/* A request with an Origin header that is not seat-web's own. */
bool web_cross_origin(struct lws *wsi, Web *w);
/* The security headers every answer carries (no body yet). */
int web_add_security_headers(struct lws *wsi, Web *w, unsigned char **p, unsigned char *end);
int web_add_keepalive_header(struct lws *wsi, Web *w, unsigned char **p, unsigned char *end);
/* The pages' files: each names[i] = { its path under assets_dir/sub, its MIME type } read
 * (at most max bytes) into assets[i], served by the part of its path after the last '/'. */
int web_assets_load(const char *assets_dir, const char *sub, const char *const (*names)[2], size_t n, size_t max,
                    Asset *assets, SeatError **ret_error);
