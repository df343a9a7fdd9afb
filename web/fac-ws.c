/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dashboards' WebSocket (/ws/facilitator/events, subprotocol "seat-dashboard"): each
 * gets the newest snapshot of fac-events.c when it can take a write. Loop thread only.
 */
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "fac-internal.h"

static int dash_filter(struct lws *wsi, Web *w, DashConn *d) {
        char uri[64];
        if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/ws/facilitator/events") != 0)
                return -1;
        if (!fac_same_origin(wsi, w)) {
                web_log_refusal(wsi, "a dashboard WebSocket without seat-web's own Origin", NULL);
                return -1;
        }
        if (fac_participant_too(wsi)) {
                web_log_refusal(wsi, "a dashboard WebSocket from a browser that holds a seat's session too", NULL);
                return -1;
        }
        FacSession *s = fac_request_session(wsi, w);
        if (!s) {
                web_log_refusal(wsi, "a dashboard WebSocket without a facilitator session", NULL);
                return -1;
        }
        if (w->fac->n_dash >= (size_t) w->conf->max_dashboards) {
                web_log_refusal(wsi, "a dashboard WebSocket over max_dashboards", NULL);
                return -1;
        }
        snprintf(d->session, sizeof(d->session), "%s", s->id);
        return 0;
}

/* The newest snapshot, if this dashboard has not had it; nothing while the last write
 * is still going out (the one buffer per browser). */
static int dash_writeable(struct lws *wsi, Web *w, DashConn *d) {
        if (!fac_session_find(w->fac->sessions, d->session, now_monotonic_ms())) {
                lws_close_reason(wsi, LWS_CLOSE_STATUS_POLICY_VIOLATION, (unsigned char *) "logged out", 10);
                return -1;
        }
        if (lws_send_pipe_choked(wsi)) {
                lws_callback_on_writable(wsi);
                return 0;
        }
        _cleanup_free_ char *msg = NULL;
        size_t len;
        uint64_t seq;
        bool up;
        if (fac_events_latest(w->fac->events, &msg, &len, &seq, &up) < 0 || seq == d->sent_seq)
                return 0;
        d->sent_seq = seq;
        return lws_write(wsi, (unsigned char *) msg + LWS_PRE, len, LWS_WRITE_TEXT) < (int) len ? -1 : 0;
}

int fac_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len) {
        DashConn *d = user;
        struct lws_context *ctx = lws_get_context(wsi);
        Web *w = ctx ? lws_context_user(ctx) : NULL;
        if (!w || !w->fac)
                return 0;
        switch (reason) {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
                if (!d || !w->fac->events)
                        return -1;
                return dash_filter(wsi, w, d) < 0 ? -1 : 0;
        case LWS_CALLBACK_ESTABLISHED:
                /* Open as long as the dashboard is; the session's expiry ends it. */
                lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
                w->fac->n_dash++;
                d->counted = true;
                lws_callback_on_writable(wsi);
                return 0;
        case LWS_CALLBACK_RECEIVE:
                return 0; /* the dashboard only listens */
        case LWS_CALLBACK_SERVER_WRITEABLE:
                return dash_writeable(wsi, w, d) < 0 ? -1 : 0;
        case LWS_CALLBACK_CLOSED:
                if (d && d->counted) {
                        d->counted = false;
                        w->fac->n_dash--;
                }
                return 0;
        default:
                return 0;
        }
}
