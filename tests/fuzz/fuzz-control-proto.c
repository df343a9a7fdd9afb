/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every line either parses or is refused with a code; what parses formats again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/control-proto.h"
#include "common/jsonframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *frame, size_t len) {
        _cleanup_control_msg_ ControlMsg *m = NULL;
        _cleanup_free_ char *out = NULL;
        ControlParseError err;
        size_t n;

        if (control_msg_parse(frame, len, &m, &err) < 0) {
                if (!err.code)
                        abort();
                return;
        }
        int r;
        switch (m->kind) {
        case CONTROL_REQUEST:
                r = control_format_request(m->id, m->method, m->body, &out, &n);
                break;
        case CONTROL_RESULT:
                r = control_format_result(m->id, m->body, &out, &n);
                break;
        case CONTROL_ERROR:
                r = control_format_error(m->id, m->error_code, m->error_message, &out, &n);
                break;
        default:
                r = control_format_event(m->id, m->type, m->body, &out, &n);
                break;
        }
        if (r < 0 && r != -E2BIG)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(64 * 1024);
        if (!r)
                return 0;
        while (size > 0) {
                size_t n = frame_reader_feed(r, data, size);
                data += n;
                size -= n;
                const char *frame;
                size_t len;
                int k;
                while ((k = frame_reader_next(r, &frame, &len)) != 0)
                        if (k > 0)
                                check_line(frame, len);
        }
        return 0;
}
