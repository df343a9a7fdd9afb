/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "client.h"
#include "common/error.h"

/* Run seat.exec params (seat, argv, ...) with live stdin and, when tty, a terminal of the
 * local one's size (raw mode while it runs when stdin is a terminal). Returns 1 with the
 * exec's result, 0 when the user disconnected with "~.", < 0 on failure (ret_error). */
int terminal_exec(CtlClient *c, json_object *params, bool tty, json_object **ret_result, SeatError **ret_error);
