/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The browser terminal's WebSocket protocol "seat-terminal" (ws-terminal.c). Loop thread. */

#include <libwebsockets.h>
#include <stdbool.h>

#include "http-parse.h"
#include "session.h"
#include "terminal.h"

#define WS_CONTROL_MAX 256
/* Typed input comes a few bytes a message; a paste is one message. A message past this is
 * not the page (a frame header may claim 2^63 bytes): the terminal is closed, 1009. */
#define WS_INPUT_MESSAGE_MAX (1u << 20)

typedef struct Web Web;
typedef struct TermConn TermConn;

/* Whom a seat's WebSocket (a terminal, or a forwarded one: ws-proxy.c) speaks for, copied
 * from the participant's session at the handshake. The token is wiped once the shell or
 * the relay has started with it. */
typedef struct WsSeatWho {
        char seat[WEB_SEAT_ID_MAX + 1];
        char session[WEB_SESSION_ID_LEN + 1];
        char token[WEB_TOKEN_HEX + 1];
} WsSeatWho;

/* One terminal WebSocket's state (libwebsockets allocates it zeroed). */
struct TermConn {
        struct lws *wsi;
        Web *w;
        WsSeatWho who;
        Terminal *term;
        char control[WS_CONTROL_MAX + 1];
        size_t control_len;
        size_t input_len; /* of the binary message being received */
        bool rx_paused, exit_sent;
        TermConn *prev, *next;
};

/* How a seat's WebSocket (a terminal, or a forwarded one: ws-proxy.c) names each refusal
 * of the handshake's checks in the log. */
typedef struct WsSeatRefusals {
        const char *cross_origin; /* no Origin, or not seat-web's own */
        const char *facilitator;  /* the browser holds a facilitator session too; NULL: allowed */
        const char *no_session;
        const char *other_seat;   /* the session cookie of another seat */
} WsSeatRefusals;

/* The handshake's checks every WebSocket of a seat makes: an Origin that is seat-web's
 * own (a browser sends cookies with a WebSocket from any site), then the participant's
 * session of that very seat. The session, or NULL after logging the refusal. */
WebSession *ws_seat_session(struct lws *wsi, Web *w, const char *seat, const WsSeatRefusals *refusals);

/* Who the handshake let in: s's seat, id and token. */
void ws_seat_who_set(WsSeatWho *who, const WebSession *s);

int ws_terminal_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);
/* A terminal's thread woke the loop: ask for a write where output or the end waits, and read
 * the browser again where input has room. */
void ws_terminal_service(Web *w);
bool ws_terminal_service_one(TermConn *tc);
/* Shutdown: every shell ends (before the context goes: their threads wake it). */
void ws_terminal_close_all(Web *w);
