/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * bytes.h: a byte queue that a worker thread appends to at the back and takes from the
 * front (a browser terminal's input and output, a relayed WebSocket's both ways). It grows
 * by doubling, so n appends cost O(n) copies (exact-size growth made a 2 MiB queue of
 * 131-byte pongs cost 16 GB of copying under ASan, whose realloc always moves), and never
 * past the caller's cap.
 */
#include <stddef.h>
#include <stdint.h>

typedef struct Bytes {
        uint8_t *data;
        size_t len, cap;
} Bytes;

/* data[0..len) at the back. -ENOBUFS past max bytes queued (nothing appended), -ENOMEM. */
int bytes_append(Bytes *b, const void *data, size_t len, size_t max);

/* The first n bytes (n <= len) gone; one move of what stays. */
void bytes_take(Bytes *b, size_t n);

/* The memory freed, the queue empty. */
void bytes_clear(Bytes *b);
