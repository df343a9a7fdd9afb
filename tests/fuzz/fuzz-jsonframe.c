/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The first byte picks a frame cap and a feed size, the rest is the stream: however it is
 * cut, the reader stays within its cap and every frame it returns parses or is refused.
 * Every frame is also parsed with small limits (JsonFrameLimits): what that parse accepts
 * must hold no more containers and values than the limits, so the scan that runs before
 * json-c is an upper bound. */
#include <stdint.h>
#include <stdlib.h>

#include "common/jsonframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Containers and values (keys included) in a parsed tree. */
static void count_tree(json_object *o, size_t *containers, size_t *values) {
        ++*values;
        if (json_object_is_type(o, json_type_array)) {
                ++*containers;
                for (size_t i = 0; i < json_object_array_length(o); i++)
                        count_tree(json_object_array_get_idx(o, i), containers, values);
        } else if (json_object_is_type(o, json_type_object)) {
                ++*containers;
                json_object_object_foreach(o, key, v) {
                        (void) key;
                        ++*values;
                        count_tree(v, containers, values);
                }
        }
}

static void check_limits(const char *frame, size_t len) {
        static const JsonFrameLimits limits = { .max_depth = 8, .max_containers = 6, .max_values = 24 };
        json_object *o = NULL;
        size_t containers = 0, values = 0;
        int r = json_frame_parse_limited(frame, len, &limits, &o);
        if (r == -E2BIG && json_frame_scan(frame, len, &limits) != -E2BIG)
                abort();
        if (r < 0)
                return;
        count_tree(o, &containers, &values);
        json_object_put(o);
        if (containers > limits.max_containers || values > limits.max_values)
                abort();
}

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
                        check_limits(frame, len);
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
