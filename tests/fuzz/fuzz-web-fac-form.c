/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A facilitator's form: any bytes give a value without NUL or control bytes other than
 * CR, LF and TAB, within its buffer, or a refusal; web_form_get() takes no more than this. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fac-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const keys[] = { "names", "csrf", "name", "password" };
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                char out[WEB_FORM_MAX + 1], strict[WEB_FORM_MAX + 1];
                int r = fac_form_get((const char *) data, size, keys[k], out, sizeof(out));
                if (r == 0) {
                        size_t n = strlen(out);
                        for (size_t i = 0; i < n; i++) {
                                unsigned char c = (unsigned char) out[i];
                                if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f)
                                        abort();
                        }
                } else if (r != -ENOENT && r != -ENOTUNIQ && r != -EBADMSG && r != -E2BIG)
                        abort();
                /* What the participants' strict parser accepts, this one reads the same. */
                if (web_form_get((const char *) data, size, keys[k], strict, sizeof(strict)) == 0 &&
                    (r != 0 || strcmp(strict, out) != 0))
                        abort();
        }
        return 0;
}
