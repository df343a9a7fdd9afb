/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The facilitator's side of seat-web: the login (facilitators file,
 * argon2id), the dashboard and its calls, the handout, evidence downloads and /metrics.
 * Everything about seats is asked of seatd's facilitator socket, which seatd serves to
 * seat-web's group only and which takes a facilitator's name as the client's word in its
 * audit log. server.c hands over every request whose path fac_http_match() claims.
 * Loop thread only, but for the work each Job does on a worker.
 */

#include <stdbool.h>

#include "common/error.h"
#include "web.h"

int fac_init(Web *w, struct lws_context *ctx, SeatError **ret_error);
void fac_done(Web *w);
/* /facilitator, /facilitator/..., /metrics */
bool fac_http_match(const char *path);
int fac_http_request(struct lws *wsi, Web *w, Conn *c, const char *path, bool get, bool post);
int fac_http_body_done(struct lws *wsi, Web *w, Conn *c);
/* Writable and nothing buffered in c->resp: the next chunk of a download. */
int fac_http_writeable(struct lws *wsi, Web *w, Conn *c);
void fac_http_closed(Web *w, Conn *c);
/* The loop was woken: finish the requests whose facilitator calls are done. */
void fac_service(Web *w);
