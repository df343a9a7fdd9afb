/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* One login attempt against two rate limits: the caller's address, and what it logs in to
 * (a seat id, a facilitator's name). Only failed attempts cost (issue 35 #6): an honest
 * participant logs in as often as they like, and a room behind one address is not locked
 * out by its own logins. The attempt is charged before it is tried and the charge is given
 * back once it succeeds, rather than charged after it fails: attempts still running count,
 * so a burst of them sent at once is refused at once, as before. */

#include <stdbool.h>
#include <stdint.h>

#include "ratelimit.h"

/* What an attempt holds until its answer is in (login_limit_settle()); zeroed: nothing. */
typedef struct LoginCharge {
        RateLimit *per_address, *per_key;
        char address[RATE_KEY_MAX], key[RATE_KEY_MAX];
        unsigned address_n, key_n;
} LoginCharge;

/* The secret tried against key is one of the seats' tokens, 256 random bits: see
 * login_limit_take() for what this lets through. A password is LOGIN_PASSWORD. */
typedef enum LoginSecret { LOGIN_PASSWORD, LOGIN_TOKEN } LoginSecret;

/* Charges an attempt from address on key: 0 and *ret_charge; -EAGAIN when the address's
 * bucket is empty (or its table full of limited keys); -EBUSY when the key's is (a token
 * from an address whose bucket is full is let through all the same: login-limit.c says
 * why). Refused attempts cost nothing more. */
int login_limit_take(RateLimit *per_address, RateLimit *per_key, LoginSecret secret, const char *address,
                     const char *key, int64_t now_ms, LoginCharge *ret_charge);
/* The attempt's answer: failed (the secret was tried and refused) keeps the charge; a
 * success, or an attempt that could not be tried (seatd not reached), gets it back. The
 * charge is cleared either way, so a second call does nothing. */
void login_limit_settle(LoginCharge *charge, bool failed, int64_t now_ms);
