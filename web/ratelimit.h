/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Login attempts per key (a client address, a seat id), token buckets in a table of fixed
 * size. An attacker picks the keys (random seat ids, many IPv6 addresses), so the table
 * never grows and never forgets a key that is still being limited: a new key takes a slot
 * whose bucket has filled up again, and when there is none the attempt is refused
 * (fail closed: a flood can delay logins, never lift the limit). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"

#define RATE_KEY_MAX 48

typedef struct RateLimit RateLimit;

/* per_minute attempts per key, burst of the same size; slots keys at most. */
RateLimit *rate_limit_new(long per_minute, size_t slots);
RateLimit *rate_limit_free(RateLimit *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(RateLimit *, rate_limit_free)

/* One attempt for key at now_ms: true when allowed (and counted), false when over the
 * limit or the table is full of limited keys. */
bool rate_limit_take(RateLimit *r, const char *key, int64_t now_ms);
