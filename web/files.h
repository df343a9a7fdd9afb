/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A participant's uploads and downloads through the page, one chunk per request
 * (files.c). Loop thread only. */

#include <stdbool.h>

#include "web.h"

/* GET or POST /api/seat/ID/file: checks the session and the query; a GET is handed to
 * seatd, a POST waits for its body. */
int files_request(struct lws *wsi, Web *w, Conn *c, bool post, bool get);
int files_body(Conn *c, const void *in, size_t len);
int files_body_done(struct lws *wsi, Web *w, Conn *c);
/* seatd answered the chunk's call. */
int files_finish(struct lws *wsi, Web *w, Conn *c, Job *job);
void files_closed(Conn *c);
