/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "error.h"
#include "server.h"

/* Registers every method module's methods (image.*, seat.*, host.*, evidence.*, pool.*) on the server. */
int seatd_methods_init(Server *s, SeatError **ret_error);
void seatd_methods_done(void);

int image_methods_init(Server *s, SeatError **ret_error);
void image_methods_done(void);

int seat_methods_init(Server *s, SeatError **ret_error);
void seat_methods_done(void);
int host_methods_init(Server *s, SeatError **ret_error);
int evidence_methods_init(Server *s, SeatError **ret_error);
int pool_methods_init(Server *s, SeatError **ret_error);
void pool_methods_done(void);
