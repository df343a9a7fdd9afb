/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The escape character of an interactive session (seatctl exec -it, seatctl shell), as
 * ssh has it: '~' at the start of a line (after Enter, or first of all) is held back and
 * looks at the next byte. "~." disconnects; "~~" sends one '~'; '~' before anything else
 * is sent with that byte. A pure function of its input, so it is unit-tested.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct EscapeState {
        bool line_start; /* the next byte starts a line */
        bool tilde;      /* a '~' at a line's start is held back */
} EscapeState;

#define ESCAPE_STATE_INIT ((EscapeState) { .line_start = true })

/* Filter n bytes of typed input into out (room for n + 1 bytes: a held '~' may come out
 * with the next byte); *ret_out_len: what to send. Returns 1 when "~." asked to disconnect
 * (out holds what came before it; the rest of in is dropped), else 0. */
int escape_feed(EscapeState *st, const uint8_t *in, size_t n, uint8_t *out, size_t *ret_out_len);
