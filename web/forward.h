/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The seat's web pages, /seat/ID/port/N/... (forward.c, docs/seat-web.md): a reverse proxy
 * over seatd's seat.forward with the session's token. Loop thread. */

#include <libwebsockets.h>
#include <stdbool.h>

#include "web.h"

/* A request under /seat/ID/port/N (c->route is WEB_ROUTE_SEAT_FORWARD). 0, or -1 to close. */
int forward_request(struct lws *wsi, Web *w, Conn *c, const char *path);
int forward_body(Conn *c, const void *in, size_t len);
int forward_body_done(struct lws *wsi, Web *w, Conn *c);
/* The exchange with the guest is over: its response, checked and filtered, or an error. */
int forward_finish(struct lws *wsi, Web *w, Conn *c, Job *job);
void forward_closed(Conn *c);
/* The request target for the guest: rest (the path under the prefix) and the query,
 * encoded again (libwebsockets hands them decoded). */
int forward_request_target(struct lws *wsi, const char *rest, char *out, size_t size);
/* Whether the request carries the facilitator's session cookie (then no seat page). */
bool forward_facilitator_present(struct lws *wsi);
bool forward_port_allowed(const WebConfig *conf, unsigned port);
