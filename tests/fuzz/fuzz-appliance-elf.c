/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The appliance kernel's ELF check (images/appliance-kernel.c) walks program headers and
 * notes whose offsets and sizes the file states: never past its bytes, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "images/appliance-kernel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* a copy of exactly size bytes: ASan sees any read past them */
        uint8_t *copy = malloc(size ? size : 1);
        if (!copy)
                return 0;
        if (size)
                memcpy(copy, data, size);
        (void) appliance_kernel_bootable(copy, size);
        free(copy);
        return 0;
}
