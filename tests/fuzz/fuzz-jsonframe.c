/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The first byte picks a frame cap and a feed size, the rest is the stream: however it is
 * cut, the reader stays within its cap and every frame it returns parses or is refused. */
#include <stdint.h>
#include <stdlib.h>

#include "jsonframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size < 1)
                return 0;
        size_t max_frame = 16 + (data[0] & 0x0f) * 64;
        size_t step = 1 + (data[0] >> 4) * 7;
        data++;
        size--;

        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(max_frame);
        if (!r)
                return 0;
        while (size > 0) {
                size_t n = frame_reader_feed(r, data, MIN(step, size));
                data += n;
                size -= n;
                const char *frame;
                size_t len;
                int k;
                while ((k = frame_reader_next(r, &frame, &len)) != 0) {
                        if (k < 0)
                                continue;
                        if (len > max_frame)
                                abort();
                        json_object *o = NULL;
                        if (json_frame_parse(frame, len, 8, &o) == 0) {
                                _cleanup_free_ char *s = NULL;
                                size_t sn;
                                (void) json_frame_format(o, 4 * max_frame + 64, &s, &sn);
                                json_object_put(o);
                        }
                }
                if (frame_reader_pending(r) > max_frame + 1)
                        abort();
        }
        return 0;
}
