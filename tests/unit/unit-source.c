/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "unit-source.h"

char *unit_read_source(const char *path) {
        const char *src = getenv("SEATD_SOURCE_DIR");
        _cleanup_free_ char *p = NULL;
        char *text = NULL;
        size_t len = 0;
        if (!src)
                return NULL;
        assert_true(asprintf(&p, "%s/%s", src, path) > 0);
        if (read_file_capped(p, 1 << 20, &text, &len) < 0)
                fail_msg("cannot read '%s'", p);
        return text;
}
