/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The pieces of a connection to seatd's control socket that every seat-web client of it
 * shares (a status call, a proxied exchange, a browser terminal, a relayed WebSocket):
 * the connect, one request line, and one bounded wait for more of seatd's lines.
 */

#include <json-c/json.h>
#include <stdint.h>

#include "common/jsonframe.h"

/* A connected socket to path, or -errno (-ENAMETOOLONG for a path no socket takes). With
 * send_timeout_ms > 0, a send waits that long at most for a seatd that stopped reading. */
int seatd_socket_connect(const char *path, int send_timeout_ms);

/* One request line (params may be NULL): 0 or -errno. */
int seatd_socket_send(int fd, int64_t id, const char *method, json_object *params);

/* Waits for fd until deadline_ms (monotonic) and reads what came into rd: 0 (also when a
 * signal cut the wait short: look at rd again), -ETIMEDOUT, -ECONNRESET when seatd closed,
 * or -errno. */
int seatd_socket_fill(int fd, FrameReader *rd, int64_t deadline_ms);
