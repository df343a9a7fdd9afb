/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every line either parses or is refused with a code; what parses formats again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/control-proto.h"
#include "fuzz-frames.h"

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
        fuzz_frames(data, size, check_line);
        return 0;
}
