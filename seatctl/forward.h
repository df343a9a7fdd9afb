/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A port forward into a seat (forward.c): a local listening socket whose TCP connections
 * are streams of one seat.forward tunnel. `seatctl forward` runs one in the foreground;
 * `seatctl mcp`'s forward_port tool runs them on threads for the session's life.
 */

#include <json-c/json.h>

#include "common/error.h"
#include "common/macro.h"
#include "forward-spec.h"

typedef struct Forwarder Forwarder;

/* Listens on spec's bind:lport (0: any free port, in *ret_port) and asks seatd for the
 * tunnel with token (NULL: as an operator) and the caller's "tool" record (may be NULL).
 * What seatd refuses at once (the token, the target's form) is an error here. */
int forwarder_open(const char *seat, const ForwardSpec *spec, const char *token, json_object *tool, Forwarder **ret,
                   unsigned *ret_port, SeatError **ret_error);
/* Carries connections until seatd ends the tunnel (< 0: the port is closed then) or
 * forwarder_stop() (0). Only this process's own uid's: any other local user's connection
 * (common/peer-uid.h) is closed at once, never opened in the seat, and said on stderr. */
int forwarder_run(Forwarder *f, SeatError **ret_error);
/* From another thread: forwarder_run() returns soon. */
void forwarder_stop(Forwarder *f);
/* Closes everything: seatd ends the tunnel's connections in the guest. */
Forwarder *forwarder_free(Forwarder *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(Forwarder *, forwarder_free)
