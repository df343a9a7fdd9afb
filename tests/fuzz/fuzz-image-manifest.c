/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Manifests: any bytes are parsed or refused with a message; what parses is consistent. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "images/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ImageManifest *m = NULL;
        SeatError *err = NULL;
        if (image_manifest_parse((const char *) data, size, &m, &err) < 0) {
                if (err && !err->message)
                        abort();
        } else {
                json_object *o = NULL;
                if (!image_name_valid(m->name) || m->n_files == 0 || image_manifest_to_json(m, &o) < 0)
                        abort();
                for (size_t i = 0; i < m->n_files; i++)
                        if (m->files[i].n_chunks != (m->files[i].size - 1) / m->files[i].chunk_size + 1)
                                abort();
                json_object_put(o);
        }
        image_manifest_free(m);
        seat_error_free(err);
        return 0;
}
