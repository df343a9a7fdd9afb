/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Any accepted profile formats canonically, and the canonical text parses back to a profile
 * that formats the same. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "network/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_egress_profile_ EgressProfile *p = NULL, *q = NULL;
        _cleanup_error_ SeatError *e = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;

        if (egress_profile_parse((const char *) data, size, &p, &e) < 0) {
                if (!e || !e->message)
                        abort(); /* every refusal says why */
                return 0;
        }
        if (egress_profile_format(p, &a) < 0)
                abort();
        if (egress_profile_parse(a, strlen(a), &q, NULL) < 0)
                abort();
        if (egress_profile_format(q, &b) < 0 || strcmp(a, b) != 0)
                abort();
        return 0;
}
