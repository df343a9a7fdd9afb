/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "control-proto.h"
#include "jsonframe.h"

#define ID_MAX ((int64_t) 1 << 53)
#define MESSAGE_MAX 4096

ControlMsg *control_msg_free(ControlMsg *m) {
        if (!m)
                return NULL;
        json_object_put(m->body);
        FREE_MANY(m->method, m->type, m->error_code, m->error_message);
        return mfree(m);
}

static int fail(ControlParseError *err, int64_t id, int r, const char *code, const char *fmt, ...) _printf_(5, 6);
static int fail(ControlParseError *err, int64_t id, int r, const char *code, const char *fmt, ...) {
        if (err) {
                va_list ap;
                err->id = id;
                err->code = code;
                va_start(ap, fmt);
                (void) vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

static bool method_valid(const char *s) {
        if (!*s)
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789._-", *p))
                        return false;
        return true;
}

static int parse_body(json_object *o, const char *key, bool required, json_object **ret) {
        json_object *v = NULL;
        int r = json_get_object(o, key, required, &v);
        if (r < 0)
                return r;
        *ret = v ? json_object_get(v) : json_object_new_object();
        return *ret ? 0 : -ENOMEM;
}

static int parse_reply(json_object *o, const char *type, ControlMsg *m, ControlParseError *err) {
        int r;
        if (!strcmp(type, "result")) {
                m->kind = CONTROL_RESULT;
                r = parse_body(o, "result", false, &m->body);
                return r < 0 ? fail(err, m->id, -EINVAL, CONTROL_ERR_INVALID, "field 'result' must be an object") : 0;
        }
        if (!strcmp(type, "error")) {
                json_object *e = NULL;
                const char *code = NULL, *message = "";
                m->kind = CONTROL_ERROR;
                if (json_get_object(o, "error", true, &e) < 0 || json_get_string(e, "code", true, 64, &code) < 0 ||
                    json_get_string(e, "message", false, MESSAGE_MAX, &message) < 0)
                        return fail(err, m->id, -EINVAL, CONTROL_ERR_INVALID,
                                    "field 'error' must be an object with strings 'code' and 'message'");
                m->error_code = strdup(code);
                m->error_message = strdup(message);
                m->body = json_object_get(e);
                return m->error_code && m->error_message ? 0 : -ENOMEM;
        }
        m->kind = CONTROL_EVENT;
        m->type = strdup(type);
        if (!m->type)
                return -ENOMEM;
        r = parse_body(o, type, false, &m->body);
        return r < 0 ? fail(err, m->id, -EINVAL, CONTROL_ERR_INVALID, "field '%s' must be an object", type) : 0;
}

static int msg_parse(const char *frame, size_t len, const JsonFrameLimits *limits, ControlMsg **ret,
                     ControlParseError *err) {
        _cleanup_json_ json_object *o = NULL;
        const char *method = NULL, *type = NULL;
        int64_t id = 0;
        int r;

        if (err)
                *err = (ControlParseError) { .code = CONTROL_ERR_MALFORMED };
        r = json_frame_parse_limited(frame, len, limits, &o);
        if (r == -E2BIG)
                return fail(err, 0, -E2BIG, CONTROL_ERR_TOO_LARGE, "line holds more than %d JSON objects and arrays or %d values",
                            CONTROL_MAX_CONTAINERS, CONTROL_MAX_VALUES);
        if (r < 0)
                return fail(err, 0, -EBADMSG, CONTROL_ERR_MALFORMED,
                            r == -ELOOP ? "JSON nested deeper than 16" : "line is not one JSON object in valid UTF-8");

        bool is_error = json_get_string(o, "type", true, 32, &type) == 0 && !strcmp(type, "error");
        if (json_get_int64(o, "id", true, is_error ? 0 : 1, ID_MAX, &id) < 0)
                return fail(err, 0, -EINVAL, CONTROL_ERR_INVALID, "field 'id' must be an integer in 1..2^53");

        _cleanup_control_msg_ ControlMsg *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->id = id;

        r = json_get_string(o, "method", false, CONTROL_METHOD_MAX, &method);
        if (r < 0 || (method && !method_valid(method)))
                return fail(err, id, -EINVAL, CONTROL_ERR_INVALID, "field 'method' must be a method name");
        if (method) {
                if (id < 1) /* only an error may carry id 0, and a request is not one */
                        return fail(err, 0, -EINVAL, CONTROL_ERR_INVALID, "field 'id' must be an integer in 1..2^53");
                m->kind = CONTROL_REQUEST;
                m->method = strdup(method);
                if (!m->method)
                        return -ENOMEM;
                r = parse_body(o, "params", false, &m->body);
                if (r < 0)
                        return fail(err, id, -EINVAL, CONTROL_ERR_INVALID, "field 'params' must be an object");
        } else {
                type = NULL;
                r = json_get_string(o, "type", true, 32, &type);
                if (r < 0 || !method_valid(type))
                        return fail(err, id, -EINVAL, CONTROL_ERR_INVALID, "a message needs 'method' or 'type'");
                r = parse_reply(o, type, m, err);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

int control_msg_parse(const char *frame, size_t len, ControlMsg **ret, ControlParseError *err) {
        static const JsonFrameLimits limits = {
                .max_depth = CONTROL_MAX_DEPTH, .max_containers = CONTROL_MAX_CONTAINERS, .max_values = CONTROL_MAX_VALUES,
        };
        return msg_parse(frame, len, &limits, ret, err);
}

int control_msg_parse_reply(const char *frame, size_t len, ControlMsg **ret, ControlParseError *err) {
        static const JsonFrameLimits limits = {
                .max_depth = CONTROL_MAX_DEPTH, .max_containers = SIZE_MAX, .max_values = SIZE_MAX,
        };
        return msg_parse(frame, len, &limits, ret, err);
}

static int format_with(int64_t id, const char *k1, const char *v1, const char *key, json_object *body,
                       char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        if (json_object_object_add(o, "id", json_object_new_int64(id)) < 0 ||
            json_object_object_add(o, k1, json_object_new_string(v1)) < 0)
                return -ENOMEM;
        if (json_add(o, key, body ? json_object_get(body) : json_object_new_object()) < 0)
                return -ENOMEM;
        return json_frame_format(o, CONTROL_MAX_FRAME, ret, ret_len);
}

int control_format_request(int64_t id, const char *method, json_object *params, char **ret, size_t *ret_len) {
        if (id < 1 || id > ID_MAX || !method_valid(method))
                return -EINVAL;
        return format_with(id, "method", method, "params", params, ret, ret_len);
}

int control_format_result(int64_t id, json_object *result, char **ret, size_t *ret_len) {
        return format_with(id, "type", "result", "result", result, ret, ret_len);
}

int control_format_event(int64_t id, const char *type, json_object *body, char **ret, size_t *ret_len) {
        if (!method_valid(type) || !strcmp(type, "result") || !strcmp(type, "error"))
                return -EINVAL;
        return format_with(id, "type", type, type, body, ret, ret_len);
}

int control_format_error(int64_t id, const char *code, const char *message, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *e = json_object_new_object();
        if (!e || json_object_object_add(e, "code", json_object_new_string(code)) < 0 ||
            json_object_object_add(e, "message", json_object_new_string(message ? message : "")) < 0)
                return -ENOMEM;
        return format_with(id, "type", "error", "error", e, ret, ret_len);
}

int control_format_progress(int64_t id, const char *what, uint64_t done, uint64_t total, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *p = json_object_new_object();
        if (!p || json_object_object_add(p, "what", json_object_new_string(what)) < 0 ||
            json_object_object_add(p, "done", json_object_new_int64((int64_t) done)) < 0 ||
            json_object_object_add(p, "total", json_object_new_int64((int64_t) total)) < 0)
                return -ENOMEM;
        return control_format_event(id, "progress", p, ret, ret_len);
}
