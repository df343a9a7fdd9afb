/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "methods.h"

int seatd_methods_init(Server *s, SeatError **ret_error) {
        return image_methods_init(s, ret_error);
}

void seatd_methods_done(void) {
        image_methods_done();
}
