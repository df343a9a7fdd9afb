/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ws-terminal.c: the browser terminal's WebSocket, GET /ws/seat/ID/terminal with the
 * subprotocol "seat-terminal" (docs/seat-web.md).
 *
 * The upgrade is allowed only with the session cookie of that seat and an Origin that is
 * seat-web's own: a browser sends cookies with a WebSocket from any site (no SameSite
 * check applies to the handshake the way it does to a POST), so without the Origin check
 * another site's page could open a shell in the participant's seat (cross-site WebSocket
 * hijacking). Then: binary messages are typed bytes, text messages are JSON controls
 * ({"type":"resize","rows":R,"cols":C}, at most WS_CONTROL_MAX bytes); the shell's output
 * goes back as binary messages and its end as {"type":"exit","code":N,"message":...}
 * before the close. The shell is a seat.exec run with the session's token (terminal.c):
 * seatd decides, and a reset ends it.
 */
#include <errno.h>
#include <libwebsockets.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "common/log.h"
#include "common/list.h"
#include "forward.h"
#include "terminal.h"
#include "web.h"
#include "ws-terminal.h"

#define WS_OUT_CHUNK (16u * 1024u)


static size_t session_terminals(Web *w, const char *session) {
        size_t n = 0;
        for (TermConn *t = w->terms; t; t = t->next)
                n += !strcmp(t->who.session, session);
        return n;
}

WebSession *ws_seat_session(struct lws *wsi, Web *w, const char *seat, const WsSeatRefusals *refusals) {
        if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) <= 0 || web_cross_origin(wsi, w)) {
                web_log_refusal(wsi, refusals->cross_origin, seat);
                return NULL;
        }
        if (refusals->facilitator && forward_facilitator_present(wsi)) {
                web_log_refusal(wsi, refusals->facilitator, seat);
                return NULL;
        }
        WebSession *s = web_request_session(wsi, w);
        if (!s) {
                web_log_refusal(wsi, refusals->no_session, seat);
                return NULL;
        }
        if (strcmp(s->seat, seat) != 0) {
                web_log_refusal(wsi, refusals->other_seat, seat);
                return NULL;
        }
        return s;
}

void ws_seat_who_set(WsSeatWho *who, const WebSession *s) {
        snprintf(who->seat, sizeof(who->seat), "%s", s->seat);
        snprintf(who->session, sizeof(who->session), "%s", s->id);
        snprintf(who->token, sizeof(who->token), "%s", s->token);
}

/* The handshake: the same checks as a page of the seat, plus a required, matching Origin. */
static int filter(struct lws *wsi, Web *w, TermConn *tc) {
        static const WsSeatRefusals refusals = {
                .cross_origin = "a terminal WebSocket without seat-web's own Origin",
                .no_session = "a terminal WebSocket without a session",
                .other_seat = "a terminal WebSocket with a session cookie of another seat",
        };
        char uri[300], arg[64];
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 ||
            web_route(uri, arg, sizeof(arg), NULL) != WEB_ROUTE_SEAT_TERMINAL)
                return -1;
        WebSession *s = ws_seat_session(wsi, w, arg, &refusals);
        if (!s)
                return -1;
        /* max_terminals counts forwarded WebSockets too (ws-proxy.c): each holds a
         * connection to seatd's participant socket as a terminal does. */
        if (w->n_terms + w->n_wsp >= (size_t) w->conf->max_terminals ||
            session_terminals(w, s->id) >= (size_t) w->conf->terminals_per_session) {
                web_log_refusal(wsi, "a terminal over max_terminals or terminals_per_session", arg);
                return -1;
        }
        ws_seat_who_set(&tc->who, s);
        return 0;
}

static int established(struct lws *wsi, Web *w, TermConn *tc) {
        /* A terminal may sit idle as long as the person does: no HTTP idle timeout. */
        lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
        TerminalSpec spec = { .socket_path = w->conf->participant_socket, .seat = tc->who.seat, .token = tc->who.token,
                              .rows = 24, .cols = 80, .ctx = lws_get_context(wsi) };
        int r = terminal_start(&spec, &tc->term);
        sodium_memzero(tc->who.token, sizeof(tc->who.token));
        if (r < 0) {
                log_warning("terminal for seat '%s': cannot start: %s", tc->who.seat, strerror(-r));
                return -1;
        }
        tc->wsi = wsi;
        tc->w = w;
        LIST_PREPEND(next, prev, w->terms, tc);
        w->n_terms++;
        log_info("terminal opened: seat '%s' (%zu open)", tc->who.seat, w->n_terms);
        return 0;
}

static void closed(Web *w, TermConn *tc) {
        if (!tc->wsi)
                return; /* refused, or never started */
        LIST_REMOVE(next, prev, w->terms, tc);
        w->n_terms--;
        tc->term = terminal_free(tc->term); /* the shell's process group dies in the guest */
        tc->wsi = NULL;
        log_info("terminal closed: seat '%s' (%zu open)", tc->who.seat, w->n_terms);
}

static int on_control(TermConn *tc) {
        _cleanup_json_ json_object *o = NULL;
        const char *type = NULL;
        int64_t rows = 0, cols = 0;
        if (json_frame_parse(tc->control, tc->control_len, 4, &o) < 0 || json_get_string(o, "type", true, 16, &type) < 0)
                return 0; /* not ours to understand: ignored */
        if (!strcmp(type, "resize") && json_get_int64(o, "rows", true, 1, TERMINAL_DIM_MAX, &rows) >= 0 &&
            json_get_int64(o, "cols", true, 1, TERMINAL_DIM_MAX, &cols) >= 0)
                (void) terminal_resize(tc->term, (int) rows, (int) cols);
        return 0;
}

static int receive(struct lws *wsi, TermConn *tc, const void *in, size_t len) {
        if (!tc->term)
                return -1;
        if (lws_frame_is_binary(wsi)) {
                /* What the header says is still to come counts: a frame that claims a
                 * terabyte is refused at once, not after streaming it into the shell. */
                if (tc->input_len + len + lws_remaining_packet_payload(wsi) > WS_INPUT_MESSAGE_MAX) {
                        static const char why[] = "input message too large";
                        log_warning("terminal for seat '%s': an input message over %u bytes: closing", tc->who.seat,
                                    WS_INPUT_MESSAGE_MAX);
                        lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *) why, sizeof(why) - 1);
                        return -1;
                }
                tc->input_len = lws_is_final_fragment(wsi) ? 0 : tc->input_len + len;
                int r = terminal_input(tc->term, in, len);
                if (r == -ENOBUFS) {
                        /* Only when the room was checked wrong: the bytes would be lost. */
                        log_warning("terminal for seat '%s': typed input over its cap: closing", tc->who.seat);
                        return -1;
                }
                if (!terminal_input_room(tc->term) && !tc->rx_paused) {
                        /* Stop reading the browser until the shell has taken some. */
                        tc->rx_paused = true;
                        lws_rx_flow_control(wsi, 0);
                }
                return 0;
        }
        if (tc->control_len + len > WS_CONTROL_MAX) {
                /* The page sends resizes of a few dozen bytes: anything longer is not the
                 * page. Closing (1009) rather than skipping it means seat-web never reads
                 * the rest of a megabyte it would only throw away. */
                static const char why[] = "control message too large";
                log_warning("terminal for seat '%s': a control message over %u bytes: closing", tc->who.seat, WS_CONTROL_MAX);
                lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *) why, sizeof(why) - 1);
                return -1;
        }
        memcpy(tc->control + tc->control_len, in, len);
        tc->control_len += len;
        if (!lws_is_final_fragment(wsi))
                return 0;
        int r = on_control(tc);
        tc->control_len = 0;
        return r;
}

static int writeable(struct lws *wsi, TermConn *tc) {
        unsigned char buf[LWS_PRE + WS_OUT_CHUNK];
        if (!tc->term)
                return -1;
        size_t n = terminal_take_output(tc->term, buf + LWS_PRE, WS_OUT_CHUNK);
        if (n > 0) {
                if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_BINARY) < (int) n)
                        return -1;
                if (terminal_has_output(tc->term))
                        lws_callback_on_writable(wsi);
                else
                        (void) ws_terminal_service_one(tc); /* the end may be next */
                return 0;
        }
        int code;
        char msg[256];
        if (!tc->exit_sent && terminal_ended(tc->term, &code, msg, sizeof(msg))) {
                _cleanup_json_ json_object *o = json_object_new_object();
                if (!o)
                        return -1;
                json_object_object_add(o, "type", json_object_new_string("exit"));
                json_object_object_add(o, "code", json_object_new_int(code));
                json_object_object_add(o, "message", json_object_new_string(msg));
                const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                size_t len = strlen(s);
                if (len > WS_OUT_CHUNK)
                        return -1;
                memcpy(buf + LWS_PRE, s, len);
                tc->exit_sent = true;
                if (lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_TEXT) < (int) len)
                        return -1;
                lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, (unsigned char *) "ended", 5);
                return -1; /* close after what was written */
        }
        return 0;
}

bool ws_terminal_service_one(TermConn *tc) {
        int code;
        char msg[8];
        if (!tc->term)
                return false;
        if (tc->rx_paused && terminal_input_room(tc->term)) {
                tc->rx_paused = false;
                lws_rx_flow_control(tc->wsi, 1);
        }
        if (terminal_has_output(tc->term) || (!tc->exit_sent && terminal_ended(tc->term, &code, msg, sizeof(msg)))) {
                lws_callback_on_writable(tc->wsi);
                return true;
        }
        return false;
}

void ws_terminal_service(Web *w) {
        for (TermConn *tc = w->terms; tc; tc = tc->next)
                (void) ws_terminal_service_one(tc);
}

void ws_terminal_close_all(Web *w) {
        while (w->terms)
                closed(w, w->terms);
}

int ws_terminal_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
        TermConn *tc = user;
        struct lws_context *ctx = lws_get_context(wsi);
        Web *w = ctx ? lws_context_user(ctx) : NULL;
        if (!w)
                return 0;
        switch (reason) {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
                if (!tc || w->conf->max_terminals == 0)
                        return -1;
                return filter(wsi, w, tc) < 0 ? -1 : 0;
        case LWS_CALLBACK_ESTABLISHED:
                return established(wsi, w, tc) < 0 ? -1 : 0;
        case LWS_CALLBACK_RECEIVE:
                return receive(wsi, tc, in, len) < 0 ? -1 : 0;
        case LWS_CALLBACK_SERVER_WRITEABLE:
                return writeable(wsi, tc) < 0 ? -1 : 0;
        case LWS_CALLBACK_CLOSED:
                if (tc)
                        closed(w, tc);
                return 0;
        default:
                return 0;
        }
}
