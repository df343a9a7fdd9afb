/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Frames the input like the agent does, parses every frame, and checks that every
 * message that parses formats, parses again to the same thing and formats identically. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/agent-proto.h"
#include "fuzz-frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const char *frame, size_t len) {
        _cleanup_agent_msg_ AgentMsg *m = NULL, *again = NULL;
        _cleanup_free_ char *s1 = NULL, *s2 = NULL;
        AgentParseError err;
        size_t n1, n2;

        if (agent_msg_parse(frame, len, &m, &err) < 0) {
                if (!err.code || strnlen(err.message, sizeof(err.message)) == sizeof(err.message))
                        abort();
                /* Whatever was refused can still be answered. */
                _cleanup_free_ char *reply = NULL;
                if (agent_format_error(err.id, err.code, err.message, AGENT_MAX_FRAME_DEFAULT, &reply, &n1) < 0)
                        abort();
                return;
        }
        if (agent_msg_format(m, 4 * AGENT_MAX_FRAME_DEFAULT, &s1, &n1) < 0)
                abort();
        if (agent_msg_parse(s1, n1 - 1, &again, NULL) < 0)
                abort();
        if (again->type != m->type || again->id != m->id)
                abort();
        if (agent_msg_format(again, 4 * AGENT_MAX_FRAME_DEFAULT, &s2, &n2) < 0)
                abort();
        if (n1 != n2 || memcmp(s1, s2, n1) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_frames(data, size, check_message);
        return 0;
}
