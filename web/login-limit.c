/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>

#include "login-limit.h"

int login_limit_take(RateLimit *per_address, RateLimit *per_key, LoginSecret secret, const char *address,
                     const char *key, int64_t now_ms, LoginCharge *ret_charge) {
        unsigned address_n = 1, key_n = 1;

        if (!rate_limit_take(per_address, address, 1, now_ms))
                return -EAGAIN;
        if (!rate_limit_take(per_key, key, 1, now_ms)) {
                /* The key's bucket is empty, and anyone may have emptied it: wrong tokens
                 * from two addresses would lock a chosen participant out of their seat.
                 * For a seat's token, an address whose own bucket is full (no failure of
                 * its own lately) may still try, staking that whole bucket: a success gets
                 * it back, a failure empties it (the address's next login waits for a
                 * token to come back, its next such try for a full bucket: a minute). Safe:
                 * a token is 256 random bits, hopeless to guess even for a botnet, which
                 * this leaves one try per address per minute on such a seat (instead of
                 * login_rate_per_address); addresses that failed lately are still refused
                 * here, and a password (guessable) gets no such pass. */
                rate_limit_give_back(per_address, address, 1, now_ms);
                if (secret != LOGIN_TOKEN || !rate_limit_take(per_address, address, RATE_WHOLE, now_ms))
                        return -EBUSY;
                address_n = RATE_WHOLE;
                key_n = 0;
        }
        *ret_charge = (LoginCharge) { .per_address = per_address, .per_key = per_key, .address_n = address_n, .key_n = key_n };
        snprintf(ret_charge->address, sizeof(ret_charge->address), "%s", address);
        snprintf(ret_charge->key, sizeof(ret_charge->key), "%s", key);
        return 0;
}

void login_limit_settle(LoginCharge *charge, bool failed, int64_t now_ms) {
        if (charge->per_address && !failed) {
                rate_limit_give_back(charge->per_address, charge->address, charge->address_n, now_ms);
                if (charge->key_n > 0)
                        rate_limit_give_back(charge->per_key, charge->key, charge->key_n, now_ms);
        }
        *charge = (LoginCharge) {};
}
