/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The handout's participant names: any bytes give up to FAC_HANDOUT_MAX distinct names
 * that seatd takes, or a refusal. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fac-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char names[FAC_HANDOUT_MAX][FAC_PARTICIPANT_MAX + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t n = 0;
        int r = fac_names_parse((const char *) data, size, names, &n);
        if (r < 0) {
                if (r != -EBADMSG && r != -E2BIG)
                        abort();
                return 0;
        }
        if (n > FAC_HANDOUT_MAX)
                abort();
        for (size_t i = 0; i < n; i++) {
                if (!fac_participant_valid(names[i]))
                        abort();
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(names[i], names[j]))
                                abort();
        }
        return 0;
}
