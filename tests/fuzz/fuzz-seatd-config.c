/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd.conf: any bytes are parsed or refused with a message, never crash. */
#include <stdint.h>
#include <stdlib.h>

#include "seatd/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SeatConfig *c = NULL;
        SeatError *err = NULL;
        if (seat_config_parse((const char *) data, size, "fuzz", &c, &err) < 0) {
                if (err && !err->message)
                        abort();
        } else if (!c->state_dir || !c->socket_path)
                abort();
        seat_config_free(c);
        seat_error_free(err);
        return 0;
}
