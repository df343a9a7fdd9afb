/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-web's one-time link records (state_dir/links/ID): any bytes give a record whose
 * seat and token have their shapes, which formats into a record that reads back the same, or a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "links.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        WebLink l;
        int r = web_link_parse((const char *) data, size, &l);
        if (r < 0) {
                if (r != -EBADMSG)
                        abort();
                return 0;
        }
        if (!web_seat_id_valid(l.seat) || !web_token_valid(l.token) || l.expires < 0)
                abort();
        /* What it read formats into a record that reads back the same. */
        char back[WEB_LINK_RECORD_MAX + 1];
        WebLink again;
        int n = web_link_format(&l, back, sizeof(back));
        if (n < 0 || web_link_parse(back, (size_t) n, &again) < 0 || strcmp(again.seat, l.seat) != 0 ||
            strcmp(again.token, l.token) != 0 || again.expires != l.expires)
                abort();
        return 0;
}
