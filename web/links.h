/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One-time login links. The facilitator, as root on the host, runs
 * `seat-web --link SEAT --token-file FILE`: seat-web writes a record into
 * state_dir/links/ID (0600, seat-web's user's) and prints https://HOST:PORT/l/ID, where ID
 * is 32 random bytes (base64url). The first GET of that URL logs its browser in, as the
 * token would, and removes the record: a second use, or one after the record's expiry,
 * opens nothing. The record holds the token itself (a link is worth what the token is)
 * in a directory only seat-web's user reads.
 */

#include <stdint.h>

#include "common/error.h"
#include "conf.h"
#include "http-parse.h"

#define WEB_LINK_RECORD_MAX 256

typedef struct WebLink {
        char seat[WEB_SEAT_ID_MAX + 1];
        char token[WEB_TOKEN_HEX + 1];
        int64_t expires; /* seconds since the epoch */
} WebLink;

/* The record's text: "seat-web-link 1\nseat S\ntoken T\nexpires N\n", exactly, each value
 * checked (fuzzed: tests/fuzz/fuzz-web-link.c). -EBADMSG otherwise. */
int web_link_parse(const char *buf, size_t len, WebLink *ret);
int web_link_format(const WebLink *l, char *buf, size_t size);

/* Write a new link for l into state_dir/links (made 0700 if missing, both owned like
 * state_dir, so that seat-web's user reads them when root writes them); its id in ret_id. */
int web_link_issue(const WebConfig *c, const WebLink *l, char ret_id[WEB_SESSION_ID_LEN + 1], SeatError **ret_error);
/* Write the link for l under the id given (a new file: -EEXIST when there is one), as
 * web_link_issue() does: for a link taken whose login could not be finished (seatd not
 * reachable), put back as it was. */
int web_link_put(const WebConfig *c, const char *id, const WebLink *l, SeatError **ret_error);
/* Take the link id: read its record and remove it, whatever it holds (one use). -ENOENT:
 * used already or never made; -ETIME: expired (and removed); 0 with *ret. */
int web_link_take(const WebConfig *c, const char *id, int64_t now_s, WebLink *ret);
