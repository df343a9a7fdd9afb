/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The `seatctl mcp SEAT` process behind one MCP session of seat-web: it holds the session's
 * token (in its environment, never in argv: argv is every local user's to read) and
 * reaches seatd through the participant socket like any participant. */

#include <sys/types.h>

#include "bytes.h"

typedef struct McpChild {
        pid_t pid;
        int in_fd;  /* its stdin: one JSON-RPC message a line, O_NONBLOCK */
        int out_fd; /* its stdout */
        Bytes in;   /* what is still to be written to in_fd, whole lines, in order */
} McpChild;

/* Starts it with a cleared environment. user: its --user (UID[:GID]) or NULL. Safe to call
 * with other threads running (only async-signal-safe calls between fork and exec). */
int mcp_child_spawn(const char *seatctl, const char *participant_socket, const char *user, const char *seat,
                    const char *token, McpChild *ret);
/* Kills and reaps it (its seatd connections close: seatd kills what runs for them);
 * closes in_fd and drops what was queued for it. out_fd is left to its reader. */
void mcp_child_kill(McpChild *c);
/* Queues one line for its stdin; nothing is written here (the event loop must never wait
 * on a child that does not read). A line always goes into an empty queue, else only while
 * the queue stays within max bytes: -ENOBUFS (nothing queued) past it. */
int mcp_child_queue(McpChild *c, const char *line, size_t len, size_t max);
/* Writes what is queued without blocking: 0 when the queue is empty, -EAGAIN when the pipe
 * is full with bytes left (wait for POLLOUT on in_fd), -EPIPE when the child is gone. */
int mcp_child_flush(McpChild *c);
