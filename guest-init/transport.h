/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "agent.h"

/* Find the virtio port named AGENT_PORT_NAME (waiting up to timeout_ms for it to appear),
 * open it non-blocking and arrange for SIGIO on host connect/disconnect. */
int transport_open_virtio(Transport *t, int64_t timeout_ms);
/* Listen on a unix socket at path (a stale socket there is replaced). */
int transport_open_unix(Transport *t, const char *path);
/* Frames from fd 0, replies to fd 1. */
int transport_open_stdio(Transport *t);
void transport_init(Transport *t);
void transport_close(Transport *t);

/* Virtio: is a host connected now? Returns 1 yes, 0 no (POLLHUP), -errno. Never blocks. */
int transport_probe(Transport *t);
/* Unix: accept a pending connection, replacing the current one. 1 when a new connection
 * was taken, 0 when none was pending. */
int transport_accept(Transport *t);
/* The connection is gone: unix closes it, virtio waits for SIGIO, stdio stops reading. */
void transport_drop(Transport *t);
