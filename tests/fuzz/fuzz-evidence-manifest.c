/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An archive manifest from outside (evidence/archive.c): every name it accepts must be
 * safe to create under a directory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "evidence/archive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_error_ SeatError *e = NULL;
        int r = archive_manifest_parse((const char *) data, size, &m, &e);
        if (r < 0) {
                if (!e || !e->message || e->code != -r || m)
                        abort();
                return 0;
        }
        if (!m || m->n_members == 0 || m->n_members > ARCHIVE_MEMBERS_MAX)
                abort();
        for (size_t i = 0; i < m->n_members; i++)
                if (!archive_name_is_safe(m->members[i].name) || strchr(m->members[i].name, '/'))
                        abort();
        return 0;
}
