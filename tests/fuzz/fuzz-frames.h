/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A protocol fuzz target's input, framed as the reading side frames it (a FrameReader of
 * 64 KiB): fn gets every whole frame; a frame the reader refuses is skipped, as the reader
 * skips it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/jsonframe.h"

static inline void fuzz_frames(const uint8_t *data, size_t size, void (*fn)(const char *frame, size_t len)) {
        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(64 * 1024);
        if (!r)
                return;
        while (size > 0) {
                size_t n = frame_reader_feed(r, data, size);
                data += n;
                size -= n;
                const char *frame;
                size_t len;
                int k;
                while ((k = frame_reader_next(r, &frame, &len)) != 0)
                        if (k > 0)
                                fn(frame, len);
        }
}
