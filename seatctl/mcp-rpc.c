/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* JSON-RPC 2.0 as MCP uses it on stdio: one message a line, no batches (removed in the
 * 2025-06-18 revision). Every line is the client's, so hostile: it is bounded before json-c
 * allocates (json_frame_parse_limited), and every field is type-checked here. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonframe.h"
#include "mcp.h"

#define MCP_MAX_DEPTH 32
#define MCP_METHOD_MAX 128
#define MCP_ID_STRING_MAX 64

const char *const mcp_protocol_versions[] = { MCP_PROTOCOL_LATEST, "2025-06-18", "2025-03-26", "2024-11-05", NULL };

void mcp_message_done(McpMessage *m) {
        json_object_put(m->root);
        *m = (McpMessage) {};
}

static int fail(McpRpcError *err, json_object *id, int code, const char *msg) {
        err->code = code;
        err->id = id;
        snprintf(err->message, sizeof(err->message), "%s", msg);
        return -EBADMSG;
}

/* An id is a string (≤ 64 bytes: it is echoed and logged) or an integer; MCP forbids null. */
static bool id_ok(json_object *id) {
        if (json_object_is_type(id, json_type_int))
                return true;
        return json_object_is_type(id, json_type_string) && json_object_get_string_len(id) <= MCP_ID_STRING_MAX;
}

int mcp_message_parse(const char *line, size_t len, McpMessage *ret, McpRpcError *err) {
        static const JsonFrameLimits limits = { .max_depth = MCP_MAX_DEPTH, .max_containers = 65536, .max_values = 262144 };
        json_object *o = NULL, *v = NULL, *id = NULL;
        const char *jsonrpc = NULL, *method = NULL;

        *ret = (McpMessage) {};
        *err = (McpRpcError) {};
        size_t i = 0;
        while (i < len && strchr(" \t\r", line[i]))
                i++;
        if (i < len && line[i] == '[')
                return fail(err, NULL, MCP_INVALID_REQUEST, "Invalid Request: batches are not supported (MCP 2025-06-18 and later send one message a line)");
        int r = json_frame_parse_limited(line, len, &limits, &o);
        if (r == -ENOMEM)
                return r;
        if (r == -E2BIG)
                return fail(err, NULL, MCP_INVALID_REQUEST, "Invalid Request: the message holds too many JSON values (at most 262144)");
        if (r == -ELOOP)
                return fail(err, NULL, MCP_PARSE_ERROR, "Parse error: JSON nested deeper than 32");
        if (r < 0)
                return fail(err, NULL, MCP_PARSE_ERROR, "Parse error: a line must be one JSON object in valid UTF-8");

        ret->root = o;
        if (json_object_object_get_ex(o, "id", &id) && !id_ok(id)) {
                return fail(err, NULL, MCP_INVALID_REQUEST, "Invalid Request: 'id' must be a string (at most 64 bytes) or an integer");
        }
        if (json_get_string(o, "jsonrpc", true, 8, &jsonrpc) < 0 || strcmp(jsonrpc, "2.0")) {
                return fail(err, NULL, MCP_INVALID_REQUEST, "Invalid Request: 'jsonrpc' must be \"2.0\"");
        }
        if (!json_object_object_get_ex(o, "method", &v)) {
                /* A response: the server sends no requests, so none is awaited. */
                if (!id || !(json_object_object_get_ex(o, "result", NULL) || json_object_object_get_ex(o, "error", NULL))) {
                                return fail(err, NULL, MCP_INVALID_REQUEST, "Invalid Request: a message needs 'method' (or is a response with 'id' and 'result' or 'error')");
                }
                ret->kind = MCP_RESPONSE;
                ret->id = id;
                return 0;
        }
        /* From here, an error can name the request it answers. */
        json_object *reply_id = id;
        if (json_get_string(o, "method", true, MCP_METHOD_MAX, &method) < 0 || !*method) {
                return fail(err, reply_id, MCP_INVALID_REQUEST, "Invalid Request: 'method' must be a string of 1..128 bytes");
        }
        if (json_object_object_get_ex(o, "params", &v) && !json_object_is_type(v, json_type_object)) {
                return fail(err, reply_id, MCP_INVALID_PARAMS, "Invalid params: 'params' must be an object");
        }
        ret->kind = id ? MCP_REQUEST : MCP_NOTIFICATION;
        ret->id = id;
        ret->method = method;
        ret->params = v;
        return 0;
}

int mcp_id_key(json_object *id, char *buf, size_t size) {
        int n;
        if (json_object_is_type(id, json_type_int))
                n = snprintf(buf, size, "n:%" PRId64, json_object_get_int64(id));
        else if (json_object_is_type(id, json_type_string))
                n = snprintf(buf, size, "s:%s", json_object_get_string(id));
        else
                return -EINVAL;
        return n < 0 || (size_t) n >= size ? -E2BIG : 0;
}

static int format(json_object *o, char **ret, size_t *ret_len) {
        /* No cap of our own: the server's replies are bounded by what the tools keep. */
        return json_frame_format(o, SIZE_MAX - 1, ret, ret_len);
}

static json_object *envelope(json_object *id) {
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "id", id ? json_object_get(id) : NULL);
        return o;
}

int mcp_format_result(json_object *id, json_object *result, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = envelope(id);
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "result", json_object_get(result));
        return format(o, ret, ret_len);
}

int mcp_format_error(json_object *id, int code, const char *message, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = envelope(id), *e = json_object_new_object();
        if (!o || !e)
                return -ENOMEM;
        json_object_object_add(e, "code", json_object_new_int(code));
        json_object_object_add(e, "message", json_object_new_string(message));
        json_object_object_add(o, "error", TAKE_PTR(e));
        return format(o, ret, ret_len);
}

int mcp_format_notification(const char *method, json_object *params, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(o, "method", json_object_new_string(method));
        if (params)
                json_object_object_add(o, "params", json_object_get(params));
        return format(o, ret, ret_len);
}
