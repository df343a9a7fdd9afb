/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one events.subscribe of a seat-web, its latest snapshot kept for the dashboards
 * (fac-events.c), and their WebSocket protocol "seat-dashboard". */

#include <libwebsockets.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"

typedef struct FacEvents FacEvents;

/* Starts the thread that subscribes (and subscribes again after seatd went away). */
FacEvents *fac_events_new(const char *socket_path, struct lws_context *ctx);
void fac_events_free(FacEvents *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(FacEvents *, fac_events_free)
/* Bumped with each snapshot (and when the stream breaks). */
uint64_t fac_events_seq(FacEvents *e);
/* A copy of the latest message (LWS_PRE bytes of room first), its seq, whether the
 * stream is up now. -ENODATA before the first snapshot. */
int fac_events_latest(FacEvents *e, char **ret, size_t *ret_len, uint64_t *ret_seq, bool *ret_connected);

/* The WebSocket side (fac-http.c keeps the table of dashboards). */
int fac_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);

typedef struct DashConn {
        char session[48];
        uint64_t sent_seq;
        bool counted;
} DashConn;
