/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "methods.h"

/* The images first (seats boot them), then the seats (adopting running ones), the
 * evidence and pool methods that use both, and the host check. */
int seatd_methods_init(Manager *m, SeatError **ret_error) {
        int r = image_methods_init(m, ret_error);
        if (r >= 0)
                r = seat_methods_init(m, ret_error);
        if (r >= 0)
                r = forward_methods_init(m, ret_error);
        if (r >= 0)
                r = evidence_methods_init(m, ret_error);
        if (r >= 0)
                r = pool_methods_init(m, ret_error);
        if (r >= 0)
                r = host_methods_init(m, ret_error);
        if (r >= 0)
                r = facilitator_methods_init(m, ret_error);
        return r;
}

void seatd_methods_done(Manager *m) {
        pool_methods_done(m);
        seat_methods_done(m);
        image_methods_done(m);
}
