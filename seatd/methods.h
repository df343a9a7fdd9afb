/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "common/error.h"
#include "manager.h"

/* Registers every method module's methods (image.*, seat.*, host.*, evidence.*, pool.*) on the server. */
int seatd_methods_init(Manager *m, SeatError **ret_error);
/* In the reverse order: the pools' worker stops before the seats go, the seats before the images. */
void seatd_methods_done(Manager *m);

int image_methods_init(Manager *m, SeatError **ret_error);
void image_methods_done(Manager *m);

int seat_methods_init(Manager *m, SeatError **ret_error);
void seat_methods_done(Manager *m);
int host_methods_init(Manager *m, SeatError **ret_error);
int forward_methods_init(Manager *m, SeatError **ret_error); /* server-forward.c: seat.forward */
int evidence_methods_init(Manager *m, SeatError **ret_error);
int pool_methods_init(Manager *m, SeatError **ret_error);
void pool_methods_done(Manager *m);
int facilitator_methods_init(Manager *m, SeatError **ret_error); /* events.subscribe, metrics */

/* seatd/chunk-reply.c: {data (base64), offset (the next), size, eof} of path from offset;
 * a missing file reads as empty. */
int request_reply_file_chunk(Request *req, const char *path, int64_t offset, size_t max_bytes);
/* seatd/evidence-methods.c: sessions waiting to be sealed, and those whose sealing failed. */
int evidence_seal_queue(SeatManager *seats, unsigned *ret_waiting, unsigned *ret_failed);
