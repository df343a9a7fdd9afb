/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ws-proxy.c: a browser's WebSocket to /seat/ID/port/N/PATH, relayed to the server in the
 * seat (ws-forward.c). libwebsockets binds a WebSocket without a subprotocol to the vhost's
 * first protocol, "http" (server.c), which hands its events here; so a page's plain
 * `new WebSocket(url)` reaches it, and nothing else does: a WebSocket without a subprotocol
 * on any other path is refused. One that asks for a subprotocol seat-web does not know is
 * refused by libwebsockets (a known limit).
 *
 * The handshake needs what the terminal's does: the session cookie of that seat and an
 * Origin that is seat-web's own (a browser sends cookies with a WebSocket from any site:
 * without this another site could talk to the participant's seat as the participant), and a
 * port in forward_ports. Each holds one connection to seatd, like a terminal, and counts
 * against max_terminals.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/list.h"
#include "forward-parse.h"
#include "forward.h"
#include "web.h"
#include "ws-proxy.h"
#include "ws-terminal.h"

static int filter(struct lws *wsi, Web *w, WsProxy *p) {
        static const WsSeatRefusals refusals = {
                .cross_origin = "a forwarded WebSocket without seat-web's own Origin",
                .facilitator = "a forwarded WebSocket from a browser with a facilitator session",
                .no_session = "a forwarded WebSocket without a session",
                .other_seat = "a forwarded WebSocket with a session cookie of another seat",
        };
        char uri[WEB_FORWARD_PATH_MAX + 1], seat[WEB_SEAT_ID_MAX + 1], target[WEB_FORWARD_PATH_MAX * 3 + 1];
        const char *rest;
        unsigned port;
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
            web_forward_path(uri, seat, sizeof(seat), &port, &rest) < 0 || !*rest)
                return -1; /* not a seat's page: no WebSocket without a subprotocol elsewhere */
        WebSession *s = ws_seat_session(wsi, w, seat, &refusals);
        if (!s)
                return -1;
        if (!forward_port_allowed(w->conf, port)) {
                web_log_refusal(wsi, "a forwarded WebSocket to a port not in forward_ports", seat);
                return -1;
        }
        /* One page must not hold every relay: a session's forwarded WebSockets are capped
         * like its terminals. */
        size_t mine = 0;
        for (WsProxy *o = w->wsp; o; o = o->next)
                mine += !strcmp(o->who.session, s->id);
        if (w->n_terms + w->n_wsp >= (size_t) w->conf->max_terminals || mine >= (size_t) w->conf->terminals_per_session) {
                web_log_refusal(wsi, "a forwarded WebSocket over max_terminals or terminals_per_session", seat);
                return -1;
        }
        if (forward_request_target(wsi, rest, target, sizeof(target)) < 0 || !(p->target = strdup(target)))
                return -1;
        ws_seat_who_set(&p->who, s);
        p->port = port;
        return 0;
}

static int established(struct lws *wsi, Web *w, WsProxy *p) {
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0); /* as long as the page keeps it */
        WsForwardSpec spec = { .socket_path = w->conf->participant_socket, .seat = p->who.seat, .token = p->who.token,
                               .host = w->conf->forward_host, .port = p->port, .target = p->target,
                               .timeout_ms = (int) w->conf->forward_timeout_ms, .ctx = lws_get_context(wsi) };
        int r = ws_forward_start(&spec, &p->fwd);
        sodium_memzero(p->who.token, sizeof(p->who.token));
        if (r < 0) {
                log_warning("forwarded WebSocket to seat '%s' port %u: cannot start: %s", p->who.seat, p->port, strerror(-r));
                return -1;
        }
        p->wsi = wsi;
        p->w = w;
        LIST_PREPEND(next, prev, w->wsp, p);
        w->n_wsp++;
        log_info("forwarded WebSocket opened: seat '%s' port %u", p->who.seat, p->port);
        return 0;
}

static void closed(Web *w, WsProxy *p) {
        free(p->target);
        p->target = NULL;
        free(p->rx);
        p->rx = NULL;
        sodium_memzero(p->who.token, sizeof(p->who.token));
        if (!p->wsi)
                return;
        LIST_REMOVE(next, prev, w->wsp, p);
        w->n_wsp--;
        p->fwd = ws_forward_free(p->fwd); /* seatd resets the guest's connection */
        p->wsi = NULL;
        log_info("forwarded WebSocket closed: seat '%s' port %u", p->who.seat, p->port);
}

static int receive(struct lws *wsi, WsProxy *p, const void *in, size_t len) {
        if (!p->fwd)
                return -1;
        if (!p->rx_bad && p->rx_len + len <= WS_FORWARD_MESSAGE_MAX) {
                uint8_t *n = realloc(p->rx, p->rx_len + len + 1);
                if (!n)
                        return -1;
                p->rx = n;
                if (len)
                        memcpy(p->rx + p->rx_len, in, len);
                p->rx_len += len;
        } else
                p->rx_bad = true;
        if (!lws_is_final_fragment(wsi))
                return 0;
        if (p->rx_bad) {
                log_warning("forwarded WebSocket to seat '%s': a message over %u bytes from the browser: closing", p->who.seat,
                            WS_FORWARD_MESSAGE_MAX);
                return -1;
        }
        int r = ws_forward_send(p->fwd, lws_frame_is_binary(wsi), p->rx, p->rx_len);
        p->rx_len = 0;
        if (r < 0)
                return -1; /* the end (the guest's close comes to the browser first), or over the queue */
        if (!ws_forward_room(p->fwd) && !p->rx_paused) {
                p->rx_paused = true;
                lws_rx_flow_control(wsi, 0);
        }
        return 0;
}

static int writeable(struct lws *wsi, WsProxy *p) {
        bool binary;
        uint8_t *data;
        size_t len;
        char why[256];
        if (!p->fwd)
                return -1;
        if (ws_forward_take(p->fwd, &binary, &data, &len)) {
                uint8_t *buf = malloc(LWS_PRE + len + 1);
                if (!buf) {
                        free(data);
                        return -1;
                }
                memcpy(buf + LWS_PRE, data, len);
                free(data);
                int n = lws_write(wsi, buf + LWS_PRE, len, binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
                free(buf);
                if (n < (int) len)
                        return -1;
                lws_callback_on_writable(wsi);
                return 0;
        }
        if (ws_forward_ended(p->fwd, why, sizeof(why))) {
                _cleanup_free_ char *esc = log_escape(why, strlen(why), 256);
                log_info("forwarded WebSocket to seat '%s' port %u ended: %s", p->who.seat, p->port, esc ? esc : "?");
                lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *) "ended", 5);
                return -1;
        }
        return 0;
}

static void service_one(WsProxy *p) {
        char why[8];
        if (!p->fwd)
                return;
        if (p->rx_paused && ws_forward_room(p->fwd)) {
                p->rx_paused = false;
                lws_rx_flow_control(p->wsi, 1);
        }
        if (ws_forward_has_message(p->fwd) || ws_forward_ended(p->fwd, why, sizeof(why)))
                lws_callback_on_writable(p->wsi);
}

void ws_proxy_service(Web *w) {
        for (WsProxy *p = w->wsp; p; p = p->next)
                service_one(p);
}

void ws_proxy_close_all(Web *w) {
        while (w->wsp)
                closed(w, w->wsp);
}

int ws_proxy_callback(struct lws *wsi, enum lws_callback_reasons reason, WsProxy **pp, void *in, size_t len) {
        struct lws_context *ctx = lws_get_context(wsi);
        Web *w = ctx ? lws_context_user(ctx) : NULL;
        if (!w || !pp)
                return -1;
        switch (reason) {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
                if (w->conf->n_forward_ports == 0 || *pp)
                        return -1;
                if (!(*pp = calloc(1, sizeof(WsProxy))))
                        return -1;
                if (filter(wsi, w, *pp) < 0) {
                        closed(w, *pp);
                        free(*pp);
                        *pp = NULL;
                        return -1;
                }
                return 0;
        case LWS_CALLBACK_ESTABLISHED:
                return *pp && established(wsi, w, *pp) >= 0 ? 0 : -1;
        case LWS_CALLBACK_RECEIVE:
                return *pp && receive(wsi, *pp, in, len) >= 0 ? 0 : -1;
        case LWS_CALLBACK_SERVER_WRITEABLE:
                return *pp && writeable(wsi, *pp) >= 0 ? 0 : -1;
        case LWS_CALLBACK_CLOSED:
                if (*pp) {
                        closed(w, *pp);
                        free(*pp);
                        *pp = NULL;
                }
                return 0;
        default:
                return 0;
        }
}
