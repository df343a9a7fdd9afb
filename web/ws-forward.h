/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One WebSocket through the proxy (docs/seat-web.md, "The seat's web pages"): a thread of
 * its own holds a seat.forward stream to the guest's server (seatd's participant socket, the
 * session's token), upgrades it to a WebSocket as the guest's client (a fresh key, the
 * answer's Sec-WebSocket-Accept checked), and relays whole messages both ways: what the
 * browser sent (ws_forward_send) goes out framed and masked, what the guest sends is read
 * by the bounded frame parser (forward-parse.c) and handed to the loop message by message.
 * The guest's pings are answered here; a close from either side ends it.
 *
 * libwebsockets terminates the browser's side (it cannot hand over the raw upgraded
 * stream), so the two sides are two WebSockets with messages, not bytes, between them.
 *
 * Bounded: a message is at most WS_FORWARD_MESSAGE_MAX either way; at most
 * WS_FORWARD_QUEUE_MAX bytes wait for the guest (then ws_forward_send is -ENOBUFS and the
 * loop stops reading the browser) and for the browser (then the thread stops reading seatd).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"

#define WS_FORWARD_MESSAGE_MAX (1024u * 1024u)
#define WS_FORWARD_QUEUE_MAX (2u * 1024u * 1024u)

struct lws_context;
typedef struct WsForward WsForward;

typedef struct WsForwardSpec {
        const char *socket_path;
        const char *seat, *token;
        const char *host;   /* forward_host, as the guest sees it */
        unsigned port;
        const char *target; /* the request target under the prefix, encoded ("/ws?x=1") */
        int timeout_ms;     /* for the tunnel and the guest's upgrade */
        struct lws_context *ctx; /* woken when there is something for the loop */
} WsForwardSpec;

int ws_forward_start(const WsForwardSpec *spec, WsForward **ret);
/* Stops the thread (seatd then resets the guest's connection), waits for it. */
WsForward *ws_forward_free(WsForward *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(WsForward *, ws_forward_free)
/* A whole message from the browser. -ENOBUFS: the queue is full (retry when
 * ws_forward_room()); -EMSGSIZE; -EPIPE after the end. */
int ws_forward_send(WsForward *f, bool binary, const void *data, size_t len);
bool ws_forward_room(WsForward *f);
/* What waits to go to the guest (its pongs included): at most WS_FORWARD_QUEUE_MAX. */
size_t ws_forward_to_guest_bytes(WsForward *f);
/* The next whole message from the guest (malloc'd), or false. */
bool ws_forward_take(WsForward *f, bool *ret_binary, uint8_t **ret_data, size_t *ret_len);
bool ws_forward_has_message(WsForward *f);
/* After the end, once every message is taken: true, with why for the log. */
bool ws_forward_ended(WsForward *f, char *why, size_t size);
