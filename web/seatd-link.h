/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* seat-web's only way to seats: one call to seatd's participant socket, as any local user
 * makes it (hello, then the method with the seat's token), with a deadline. seatd checks
 * the token and the seat on every call; seat-web only relays what it answers. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* Returns 0 with the result; -EREMOTEIO when seatd answered with an error (its code, e.g.
 * "denied", in ret_code, a static string of at most 31 bytes); -ETIMEDOUT, -ECONNREFUSED,
 * -ENOENT, -EPROTO, … when seatd could not be asked. */
int seatd_call(const char *socket_path, int timeout_ms, const char *method, json_object *params,
               json_object **ret_result, char ret_code[32]);
/* The same, with seatd's error message (cut to message_size) beside its code. */
int seatd_call_message(const char *socket_path, int timeout_ms, const char *method, json_object *params,
                       json_object **ret_result, char ret_code[32], char *ret_message, size_t message_size);

/* What a long call (a provision: a cold boot) asks every 250 ms while it waits; true: the
 * call gives up with -ECANCELED and closes its connection, and seatd, seeing its client
 * gone, undoes what it did for it (a provisioned seat is released again). */
typedef struct SeatdCancel {
        bool (*cancelled)(void *userdata);
        void *userdata;
} SeatdCancel;
/* seatd_call_message(), which cancel (NULL: none) may stop early. */
int seatd_call_cancellable(const char *socket_path, int timeout_ms, const SeatdCancel *cancel, const char *method,
                           json_object *params, json_object **ret_result, char ret_code[32], char *ret_message,
                           size_t message_size);
