/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One line from an MCP client (seatctl mcp): it parses into a message whose parts have the
 * types the server relies on, or is refused with a JSON-RPC error code; replies format.
 * The guest-text repair runs on the same bytes: its output is always valid UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        McpMessage m;
        McpRpcError err;
        _cleanup_free_ char *out = NULL;
        size_t n;

        int r = mcp_message_parse((const char *) data, size, &m, &err);
        if (r == -EBADMSG) {
                if (err.code > -32000 && err.code != MCP_SERVER_BUSY)
                        if (err.code != MCP_INVALID_PARAMS)
                                abort();
                if (mcp_format_error(err.id, err.code, err.message, &out, &n) < 0)
                        abort();
                mcp_message_done(&m);
        } else if (r == 0) {
                if (m.kind != MCP_RESPONSE && (!m.method || !*m.method))
                        abort();
                if (m.kind == MCP_REQUEST && !m.id)
                        abort();
                if (m.params && !json_object_is_type(m.params, json_type_object))
                        abort();
                char key[96];
                if (m.id && mcp_id_key(m.id, key, sizeof(key)) < 0)
                        abort();
                if (mcp_format_result(m.id, m.params, &out, &n) < 0)
                        abort();
                mcp_message_done(&m);
        }

        size_t len = 0;
        _cleanup_free_ char *text = utf8_from_bytes(data, size, 4096, &len);
        if (!text || !utf8_is_valid(text, len) || strlen(text) != len)
                abort();
        return 0;
}
