/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* WebSockets under /seat/ID/port/N/ (ws-proxy.c): the libwebsockets protocol for a
 * browser's WebSocket without a subprotocol, relayed to the guest by ws-forward.c. */

#include <libwebsockets.h>
#include <stdbool.h>

#include "http-parse.h"
#include "ws-forward.h"
#include "ws-terminal.h"

typedef struct Web Web;
typedef struct WsProxy WsProxy;

struct WsProxy {
        struct lws *wsi;
        Web *w;
        WsSeatWho who; /* its session's: terminals_per_session counts these too */
        unsigned port;
        char *target;
        WsForward *fwd;
        uint8_t *rx;            /* the browser's message being assembled */
        size_t rx_len;
        bool rx_bad, rx_paused, close_sent;
        WsProxy *prev, *next;
};

/* The WebSocket events of the "http" protocol (server.c); *pp is the connection's relay,
 * made by the handshake's filter and freed when it closes. */
int ws_proxy_callback(struct lws *wsi, enum lws_callback_reasons reason, WsProxy **pp, void *in, size_t len);
/* A relay's thread woke the loop. */
void ws_proxy_service(Web *w);
void ws_proxy_close_all(Web *w);
