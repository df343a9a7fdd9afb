/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The `seatctl mcp SEAT` process behind one MCP session of seat-web: it holds the session's
 * token (in its environment, never in argv: argv is every local user's to read) and
 * reaches seatd through the participant socket like any participant. */

#include <sys/types.h>

typedef struct McpChild {
        pid_t pid;
        int in_fd;  /* its stdin: one JSON-RPC message a line */
        int out_fd; /* its stdout */
} McpChild;

/* Starts it with a cleared environment. user: its --user (UID[:GID]) or NULL. Safe to call
 * with other threads running (only async-signal-safe calls between fork and exec). */
int mcp_child_spawn(const char *seatctl, const char *participant_socket, const char *user, const char *seat,
                    const char *token, McpChild *ret);
/* Kills and reaps it (its seatd connections close: seatd kills what runs for them);
 * closes in_fd. out_fd is left to its reader. */
void mcp_child_kill(McpChild *c);
/* Writes one line to its stdin within timeout_ms: -ETIMEDOUT when it stopped reading,
 * -EPIPE when it is gone. */
int mcp_child_write(McpChild *c, const char *line, size_t len, int timeout_ms);
