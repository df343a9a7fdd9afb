/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "methods.h"

int seatd_methods_init(Server *s, SeatError **ret_error) {
        int r = image_methods_init(s, ret_error);
        if (r < 0)
                return r;
        r = seat_methods_init(s, ret_error);
        if (r < 0)
                return r;
        r = evidence_methods_init(s, ret_error);
        if (r >= 0)
                r = pool_methods_init(s, ret_error);
        if (r < 0)
                return r;
        return host_methods_init(s, ret_error);
}

void seatd_methods_done(void) {
        pool_methods_done(); /* its worker stops before the seats go */
        seat_methods_done();
        image_methods_done();
}
