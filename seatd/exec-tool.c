/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat.exec's "tool" record and its guest user: parameters a front end adds to an exec. */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "common/jsonframe.h"
#include "common/utf8.h"
#include "exec-tool.h"
#include "signing/hash.h"

#define GUEST_ID_MAX ((int64_t) 4294967294LL)

static bool tool_name_ok(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("_.-", *s)))
                        return false;
        return true;
}


int exec_tool_record(json_object *params, json_object **ret, SeatError **ret_error) {
        json_object *tool = NULL;
        const char *name = NULL, *client = NULL, *args = NULL, *request = NULL;

        *ret = NULL;
        if (json_get_object(params, "tool", false, &tool) < 0)
                return seat_error_set(ret_error, EINVAL, "'tool' must be an object");
        if (!tool)
                return 0;
        if (json_get_string(tool, "name", true, EXEC_TOOL_NAME_MAX, &name) < 0 || !tool_name_ok(name))
                return seat_error_set(ret_error, EINVAL,
                                      "'tool.name' must be 1..64 of letters, digits and '_.-'");
        if (json_get_string(tool, "client", false, EXEC_TOOL_CLIENT_MAX, &client) < 0)
                return seat_error_set(ret_error, EINVAL, "'tool.client' must be a string of at most 256 bytes");
        if (json_get_string(tool, "request", false, EXEC_TOOL_REQUEST_MAX, &request) < 0)
                return seat_error_set(ret_error, EINVAL, "'tool.request' must be a string of at most 64 bytes");
        /* No cap of its own: the control frame (1 MiB) bounds it; the record keeps a prefix. */
        if (json_get_string(tool, "arguments", false, SIZE_MAX, &args) < 0)
                return seat_error_set(ret_error, EINVAL, "'tool.arguments' must be a string (the arguments as JSON text)");

        _cleanup_json_ json_object *rec = json_object_new_object();
        if (!rec)
                return -ENOMEM;
        json_object_object_add(rec, "name", json_object_new_string(name));
        if (client)
                json_object_object_add(rec, "client", json_object_new_string(client));
        if (request)
                json_object_object_add(rec, "request", json_object_new_string(request));
        if (args) {
                size_t len = strlen(args), keep = utf8_cut(args, len, EXEC_TOOL_ARGS_KEEP);
                uint8_t d[64];
                char hex[129];
                crypto_generichash(d, sizeof(d), (const uint8_t *) args, len, NULL, 0);
                if (digest_to_hex(d, sizeof(d), hex, sizeof(hex)) < 0)
                        return -EINVAL;
                json_object_object_add(rec, "arguments", json_object_new_string_len(args, (int) keep));
                json_object_object_add(rec, "arguments_truncated", json_object_new_boolean(keep < len));
                json_object_object_add(rec, "arguments_bytes", json_object_new_int64((int64_t) len));
                json_object_object_add(rec, "arguments_blake2b", json_object_new_string(hex));
        }
        *ret = TAKE_PTR(rec);
        return 0;
}

int exec_guest_user(json_object *params, int64_t *ret_uid, int64_t *ret_gid, SeatError **ret_error) {
        *ret_uid = *ret_gid = 0;
        if (json_get_int64(params, "uid", false, 0, GUEST_ID_MAX, ret_uid) < 0 ||
            json_get_int64(params, "gid", false, 0, GUEST_ID_MAX, ret_gid) < 0)
                return seat_error_set(ret_error, EINVAL, "'uid' and 'gid' must be integers 0..4294967294 (the guest user to run as)");
        /* A uid without a gid runs with the gid of the same number, as the common case of
         * user and group pairs (nobody: 65534/65534). */
        if (json_object_object_get_ex(params, "uid", NULL) && !json_object_object_get_ex(params, "gid", NULL))
                *ret_gid = *ret_uid;
        return 0;
}

json_object *exec_tool_call_record(json_object *tool, int64_t uid, bool operator, int64_t generation, const char *method) {
        json_object *rec = json_object_new_object();
        if (!rec)
                return NULL;
        json_object_object_add(rec, "uid", json_object_new_int64(uid));
        json_object_object_add(rec, "operator", json_object_new_boolean(operator));
        json_object_object_add(rec, "generation", json_object_new_int64(generation));
        json_object_object_add(rec, "method", json_object_new_string(method));
        json_object_object_add(rec, "tool", json_object_get(tool));
        json_object_object_add(rec, "status", json_object_new_string("ok"));
        return rec;
}
