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

#include <stddef.h>
#include <stdint.h>

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
