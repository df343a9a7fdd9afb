/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One proxied HTTP exchange with a server in a seat, through seatd's seat.forward on the
 * participant socket with the session's token (docs/protocol-control.md "Port
 * forwarding"): hello, the tunnel, one stream; the request's bytes go in, with a
 * half-close after them, and the guest's bytes come back until it ends the stream. seatd
 * checks the token and records forward.start / forward.end in the seat's audit log.
 * Blocking, with a deadline for the whole exchange: run by a worker thread (jobs.c).
 */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "common/control-proto.h"

typedef struct ForwardTarget {
        const char *socket_path; /* seatd's participant socket */
        const char *seat, *token;
        const char *host;        /* as the guest sees it */
        unsigned port;
        int timeout_ms;          /* the whole exchange */
        size_t max_response;     /* bytes from the guest: more is -EFBIG */
} ForwardTarget;

/*
 * 0 with the guest's bytes (malloc'd, NUL-terminated beyond *ret_len); -EACCES: seatd
 * refused the token (reset, released, not this seat's); -ECONNREFUSED: the guest could not
 * connect (its reason in message); -EFBIG: the guest sent more than max_response;
 * -ETIMEDOUT; -EREMOTEIO: seatd refused otherwise (its code and message); -EPROTO, -ECONNRESET,
 * -errno: seatd could not be asked.
 */
int forward_exchange(const ForwardTarget *t, const void *request, size_t request_len, uint8_t **ret_response,
                     size_t *ret_len, char ret_code[32], char *message, size_t message_size);

/* The request ids of a tunnel on one seatd connection (forward_exchange() and a relayed
 * WebSocket, ws-forward.c): hello, seat.forward, and its one stream's seat.forward.open;
 * the seat.forward.send requests take the ids after them. */
#define FORWARD_ID_HELLO 1
#define FORWARD_ID_TUNNEL 2
#define FORWARD_ID_OPEN 3

/* hello, the tunnel and its stream sent in one go (seatd takes them in order, and the
 * open finds its tunnel): 0 or -errno. */
int forward_link_open(int fd, const char *seat, const char *token, const char *host, unsigned port);

/* A seat.forward.send's params for n bytes of data on the stream (the caller may add
 * "eof"), or NULL (no memory). */
json_object *forward_link_send_params(const void *data, size_t n);

/* A data event carries at most 64 KiB, in base64, in a JSON line; a seat.forward.send
 * carries at most FORWARD_LINK_SEND_CHUNK bytes. */
#define FORWARD_LINK_FRAME_MAX (256u * 1024u)
#define FORWARD_LINK_SEND_CHUNK (32u * 1024u)

typedef enum ForwardLinkEvent {
        FORWARD_LINK_NONE, /* nothing to act on */
        FORWARD_LINK_DATA, /* the guest's bytes */
        FORWARD_LINK_END,  /* the guest's end of the stream: "eof" or "closed" */
} ForwardLinkEvent;

/* What a message on the tunnel (id FORWARD_ID_TUNNEL, not an error) brings: its "data",
 * decoded, in *ret_data (malloc'd) and *ret_len, or the stream's end. The tunnel's own
 * result is not asked here: the callers tell it apart from the guest's end. -EPROTO when
 * the data is not base64 of at most a frame. */
int forward_link_event(const ControlMsg *m, void **ret_data, size_t *ret_len);
