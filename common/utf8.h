/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Guest bytes as Unicode text. What a tool prints is the guest's: any bytes at all. JSON
 * strings (MCP messages, asciicast recordings) must be Unicode, and a reader that meets
 * invalid UTF-8 may reject the whole document, so each bad byte becomes U+FFFD (the WHATWG
 * decoder's rule, one per byte), and NUL too (json-c's strings are C strings on the way out).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is invalid or cut short by
 * n. Overlongs, surrogates and code points above U+10FFFF are invalid. */
size_t utf8_sequence(const uint8_t *s, size_t n);
/* Valid UTF-8 with no NUL. */
bool utf8_is_valid(const void *data, size_t len);
/* How many bytes at the end of data begin a sequence that more bytes could complete (0..3):
 * a stream converted chunk by chunk keeps them for the next chunk. */
size_t utf8_pending_tail(const void *data, size_t len);
/* The longest prefix of s (len bytes), at most max bytes, that ends on a character
 * boundary: a cut never splits a sequence (the bytes need not be valid otherwise). */
size_t utf8_cut(const char *s, size_t len, size_t max);
/* The first max bytes of data (all when max >= len) as a NUL-terminated valid string, each
 * bad byte and NUL replaced by U+FFFD; its length in *ret_len. NULL: out of memory. */
char *utf8_from_bytes(const void *data, size_t len, size_t max, size_t *ret_len);
