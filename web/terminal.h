/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One browser terminal: a login shell in the seat with a pseudo-terminal and live stdin
 * (seat.exec with "pty" and "stdin_live" on seatd's participant socket, with the session's
 * token: seatd decides, as for every other request), run by a thread of its own so that the
 * event loop never waits for seatd or the guest.
 *
 * Both directions are bounded. What the guest prints waits here for the browser up to
 * TERMINAL_OUT_CAP; past it the thread stops reading seatd, so a slow browser slows the
 * stream instead of growing memory (seatd then holds it up to its own per-client cap).
 * Typed input waits up to TERMINAL_IN_CAP (the loop stops reading the WebSocket above
 * it), and at most TERMINAL_INFLIGHT_MAX seat.exec.stdin requests are unanswered at once.
 * Resizes are coalesced: only the latest size is sent.
 *
 * The loop thread calls every function but the thread's own; the thread wakes the loop
 * (lws_cancel_service) when output or the end is there, and the loop asks terminal_*
 * what to do. Freeing closes seatd's connection: seatd kills the shell's process group.
 */

#include <stdbool.h>
#include <stddef.h>

#include "common/macro.h"

#define TERMINAL_OUT_CAP (256u * 1024u)
#define TERMINAL_IN_CAP (64u * 1024u)
#define TERMINAL_INFLIGHT_MAX 4
#define TERMINAL_DIM_MAX 1000

struct lws_context;
typedef struct Terminal Terminal;

typedef struct TerminalSpec {
        const char *socket_path; /* seatd's participant socket */
        const char *seat, *token;
        int rows, cols;
        struct lws_context *ctx; /* woken when there is something for the loop */
} TerminalSpec;

int terminal_start(const TerminalSpec *spec, Terminal **ret);
/* Stops the thread (the shell dies in the guest), waits for it, wipes the token. */
Terminal *terminal_free(Terminal *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Terminal *, terminal_free)

/* Typed bytes for the shell: -ENOBUFS when TERMINAL_IN_CAP would be passed (the caller
 * stops reading until terminal_input_room() says so), -EPIPE after the end. */
int terminal_input(Terminal *t, const void *data, size_t len);
bool terminal_input_room(Terminal *t);
/* The browser's terminal size (1..TERMINAL_DIM_MAX each, else -EINVAL). */
int terminal_resize(Terminal *t, int rows, int cols);
/* Up to max bytes of output into buf; the count. */
size_t terminal_take_output(Terminal *t, void *buf, size_t max);
bool terminal_has_output(Terminal *t);
/* After the end, once the output is taken: true, with the shell's exit code (-1 when it
 * did not exit: seatd refused or ended it) and a message for the person. */
bool terminal_ended(Terminal *t, int *ret_code, char *msg, size_t size);
