/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "methods.h"

int seatd_methods_init(Server *s, SeatError **ret_error) {
        return 0;
}

void seatd_methods_done(void) {
}
