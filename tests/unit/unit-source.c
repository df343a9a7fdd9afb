/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>

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

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st, (void) flag, (void) ftw;
        return remove(path) < 0 ? -1 : 0;
}

int unit_remove_tree(const char *dir) {
        if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0)
                return 0;
        return errno == ENOENT ? 0 : -1;
}
