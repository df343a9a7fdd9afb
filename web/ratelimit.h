/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Login attempts per key (a client address, a seat id), token buckets in a table of fixed
 * size. An attacker picks the keys (random seat ids, many IPv6 addresses), so the table
 * never grows and never forgets a key that is still being limited: a new key takes a slot
 * whose bucket has filled up again, and when there is none the attempt is refused
 * (fail closed: a flood can delay logins, never lift the limit). */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"

#define RATE_KEY_MAX 48
/* n for a whole bucket: n is capped at the bucket's size, which is never above 10000. */
#define RATE_WHOLE UINT_MAX

typedef struct RateLimit RateLimit;

/* per_minute attempts per key, burst of the same size; slots keys at most. */
RateLimit *rate_limit_new(long per_minute, size_t slots);
RateLimit *rate_limit_free(RateLimit *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(RateLimit *, rate_limit_free)

/* n attempts (capped at the bucket's size: RATE_WHOLE takes a full bucket, all of it) for
 * key at now_ms, all or none: true when the bucket holds them (they are taken), false when
 * it does not or the table is full of limited keys. */
bool rate_limit_take(RateLimit *r, const char *key, unsigned n, int64_t now_ms);
/* Puts n attempts taken for key back (an attempt that turned out not to count), up to a
 * full bucket; nothing when the key is no longer held. */
void rate_limit_give_back(RateLimit *r, const char *key, unsigned n, int64_t now_ms);
