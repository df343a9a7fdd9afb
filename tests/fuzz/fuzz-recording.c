/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whatever a guest prints, in whatever chunks, a recording is valid UTF-8, one JSON value
 * per line, within its cap (plus the closing marker's reserve). The first byte of each
 * chunk gives its length and its direction (output, input, resize). */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/macro.h"
#include "common/utf8.h"
#include "recording.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char path[64];
        snprintf(path, sizeof(path), "/tmp/fuzz-recording-%d.cast", (int) getpid());
        (void) unlink(path);
        Recording *r = NULL;
        RecordingSpec spec = { .cols = 80, .rows = 24, .command = "fuzz", .max_bytes = 2048, .record_input = true };
        if (recording_open(path, &spec, &r) < 0)
                abort();
        for (size_t i = 0; i < size;) {
                uint8_t h = data[i++];
                size_t n = MIN((size_t) (h & 0x3F), size - i);
                if ((h >> 6) == 0)
                        recording_output(r, data + i, n);
                else if ((h >> 6) == 1)
                        recording_input(r, data + i, n);
                else
                        recording_resize(r, (int64_t) n + 1, (int64_t) (h >> 6));
                i += n;
        }
        (void) recording_close(r);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (read_file_capped(path, 1 << 20, &text, &len) < 0 || len > 2048 || !utf8_is_valid(text, len))
                abort();
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                json_object *o = json_tokener_parse(l);
                if (!o)
                        abort();
                json_object_put(o);
        }
        (void) unlink(path);
        char side[80];
        snprintf(side, sizeof(side), "%s.dropped", path);
        (void) unlink(side);
        return 0;
}
