/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The format check reads a hostile file's first bytes: never past them, never crash. */
#include <stdint.h>
#include <stdlib.h>

#include "images/qcow2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SeatError *err = NULL;
        (void) image_format_check(IMAGE_FORMAT_QCOW2, data, size, size + (1u << 20), "fuzz", &err);
        err = seat_error_free(err);
        (void) image_format_check(IMAGE_FORMAT_RAW, data, size, size, "fuzz", &err);
        seat_error_free(err);
        return 0;
}
