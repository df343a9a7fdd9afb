/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facilitators file: any bytes give a table of valid names and hashes, or a refusal;
 * what was read formats into a file that reads back the same. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facilitators.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FacUsers users, again;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int r = fac_users_parse((const char *) data, size, &users);
        if (r < 0) {
                if (r != -EBADMSG || users.n != 0)
                        abort();
                return 0;
        }
        if (users.n > FAC_USERS_MAX)
                abort();
        for (size_t i = 0; i < users.n; i++)
                if (!fac_name_valid(users.u[i].name) || !fac_hash_valid(users.u[i].hash))
                        abort();
        char *text = NULL;
        size_t len;
        if (fac_users_format(&users, &text, &len) < 0)
                abort();
        if (fac_users_parse(text, len, &again) < 0 || again.n != users.n)
                abort();
        for (size_t i = 0; i < users.n; i++)
                if (strcmp(again.u[i].name, users.u[i].name) || strcmp(again.u[i].hash, users.u[i].hash))
                        abort();
        free(text);
        return 0;
}
