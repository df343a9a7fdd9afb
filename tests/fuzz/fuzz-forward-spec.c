/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatctl forward's argument: whatever it accepts has ports in range and a host the agent
 * codec takes (letters, digits, '.-_:'), all NUL-terminated within their fields. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forward-spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        ForwardSpec f;
        const char *why = NULL;
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        if (forward_spec_parse(s, &f, &why) >= 0) {
                size_t n = strnlen(f.host, sizeof(f.host));
                if (n == 0 || n == sizeof(f.host) || f.gport == 0 || strnlen(f.bind, sizeof(f.bind)) == sizeof(f.bind))
                        abort();
                for (size_t i = 0; i < n; i++)
                        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:", f.host[i]))
                                abort();
        } else if (!why)
                abort();
        free(s);
        return 0;
}
