/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "methods.h"

/* The images first (seats boot them), then the seats (adopting running ones), the
 * evidence and pool methods that use both, and the host check. */
int seatd_methods_init(Manager *m, SeatError **ret_error) {
        static int (*const inits[])(Manager *, SeatError **) = {
                image_methods_init, seat_methods_init, forward_methods_init, evidence_methods_init,
                pool_methods_init, host_methods_init, facilitator_methods_init,
        };
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(inits) && r >= 0; i++)
                r = inits[i](m, ret_error);
        return r;
}

void seatd_methods_done(Manager *m) {
        pool_methods_done(m);
        seat_methods_done(m);
        image_methods_done(m);
}
