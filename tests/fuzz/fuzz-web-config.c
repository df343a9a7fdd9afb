/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web.conf: any bytes are parsed or refused with a message; an accepted config
 * never has plain HTTP off loopback. */
#include <stdint.h>
#include <stdlib.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        WebConfig *c = NULL;
        SeatError *err = NULL;
        if (web_config_parse((const char *) data, size, "fuzz", &c, &err) < 0) {
                if (!err || !err->message)
                        abort();
        } else if (!c->state_dir || !c->listen_address || (c->plain_http && !web_address_is_loopback(c->listen_address)) ||
                   (!c->tls_cert != !c->tls_key))
                abort();
        web_config_free(c);
        seat_error_free(err);
        return 0;
}
