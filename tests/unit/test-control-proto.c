/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/control-proto.h"
#include "common/jsonframe.h"
#include "unit-cases.h"

static ControlMsg *parse(const char *s) {
        ControlMsg *m = NULL;
        ControlParseError err;
        if (control_msg_parse(s, strlen(s), &m, &err) < 0)
                fail_msg("'%s': %s", s, err.message);
        return m;
}

static void refused(const char *s, int64_t id, const char *code) {
        ControlMsg *m = NULL;
        ControlParseError err;
        assert_true(control_msg_parse(s, strlen(s), &m, &err) < 0);
        assert_null(m);
        assert_int_equal(err.id, id);
        assert_string_equal(err.code, code);
}

TEST(request) {
        _cleanup_control_msg_ ControlMsg *m = parse("{\"id\":3,\"method\":\"image.import\",\"params\":{\"manifest\":\"/x\"}}");
        const char *v = NULL;
        assert_int_equal(m->kind, CONTROL_REQUEST);
        assert_int_equal(m->id, 3);
        assert_string_equal(m->method, "image.import");
        assert_int_equal(json_get_string(m->body, "manifest", true, 100, &v), 0);
        assert_string_equal(v, "/x");

        _cleanup_control_msg_ ControlMsg *n = parse("{\"id\":4,\"method\":\"image.list\"}");
        assert_non_null(n->body); /* params default to {} */
}

TEST(replies) {
        _cleanup_control_msg_ ControlMsg *r = parse("{\"id\":3,\"type\":\"result\",\"result\":{\"a\":1}}");
        assert_int_equal(r->kind, CONTROL_RESULT);
        _cleanup_control_msg_ ControlMsg *e = parse("{\"id\":3,\"type\":\"error\",\"error\":{\"code\":\"denied\",\"message\":\"no\"}}");
        assert_int_equal(e->kind, CONTROL_ERROR);
        assert_string_equal(e->error_code, "denied");
        assert_string_equal(e->error_message, "no");
        _cleanup_control_msg_ ControlMsg *p = parse("{\"id\":3,\"type\":\"progress\",\"progress\":{\"done\":1,\"total\":2}}");
        assert_int_equal(p->kind, CONTROL_EVENT);
        assert_string_equal(p->type, "progress");
        _cleanup_control_msg_ ControlMsg *z = parse("{\"id\":0,\"type\":\"error\",\"error\":{\"code\":\"malformed\"}}");
        assert_int_equal(z->id, 0);
}

TEST(refusals) {
        static const struct {
                const char *line;
                int64_t id; /* the id the error goes back to */
                const char *code;
        } cases[] = {
                { "nope", 0, CONTROL_ERR_MALFORMED },
                { "{\"method\":\"hello\"}", 0, CONTROL_ERR_INVALID },
                { "{\"id\":0,\"method\":\"hello\"}", 0, CONTROL_ERR_INVALID },
                { "{\"id\":5,\"method\":\"Hello World\"}", 5, CONTROL_ERR_INVALID },
                { "{\"id\":5,\"method\":\"hello\",\"params\":[1]}", 5, CONTROL_ERR_INVALID },
                { "{\"id\":5}", 5, CONTROL_ERR_INVALID },
                /* Found by libFuzzer: "type":"error" let id 0 through, on what was a request. */
                { "{\"id\":0,\"type\":\"error\",\"method\":\"hello\"}", 0, CONTROL_ERR_INVALID },
                { "{\"id\":5,\"type\":\"error\",\"error\":\"x\"}", 5, CONTROL_ERR_INVALID },
                { "{\"id\":5,\"type\":\"result\",\"result\":7}", 5, CONTROL_ERR_INVALID },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                refused(cases[i].line, cases[i].id, cases[i].code);
}

/* A client's line is parsed on seatd's event loop before it has said hello: 1 MiB of
 * "{}," would cost json-c some 270 MiB and 0.3 s there. Refused unparsed, with too_large. */
TEST(amplification) {
        _cleanup_free_ char *amp = unit_repeat_len("{\"id\":1,\"method\":\"hello\",\"params\":{\"x\":[", "{}", 1024 * 1024, "]}}");
        _cleanup_free_ char *arrays = unit_repeat_len("{\"id\":1,\"method\":\"hello\",\"params\":{\"x\":[", "[]", 1024 * 1024, "]}}");
        _cleanup_free_ char *zeros = unit_repeat_len("{\"id\":1,\"method\":\"hello\",\"params\":{\"x\":[", "0", 1024 * 1024, "]}}");
        _cleanup_free_ char *keys = unit_repeat_len("{\"id\":1,\"method\":\"hello\",\"params\":{", "\"\":0", 1024 * 1024, "}}");
        ControlParseError err;
        ControlMsg *m = NULL;

        const char *const floods[] = { amp, arrays, zeros, keys };
        for (size_t i = 0; i < ELEMENTSOF(floods); i++)
                refused(floods[i], 0, CONTROL_ERR_TOO_LARGE);
        assert_int_equal(control_msg_parse(amp, strlen(amp), &m, &err), -E2BIG);
        assert_non_null(strstr(err.message, "more than 64 JSON objects and arrays or 4096 values"));

        /* The largest request there is still parses: seat.exec with 1024 argv and 1024 env
         * strings (AGENT_ARGV_MAX, AGENT_ENV_MAX). */
        _cleanup_free_ char *argv = unit_repeat_count("", "\"x\"", 1024, "");
        _cleanup_free_ char *env = unit_repeat_count("", "\"A=1\"", 1024, "");
        _cleanup_free_ char *exec = NULL;
        assert_true(asprintf(&exec, "{\"id\":2,\"method\":\"seat.exec\",\"params\":{\"seat\":\"s1\",\"token\":\"t\","
                                    "\"argv\":[%s],\"env\":[%s],\"cwd\":\"/\",\"timeout_ms\":1000,\"stdin\":\"\"}}",
                             argv, env) > 0);
        _cleanup_control_msg_ ControlMsg *ok = parse(exec);
        assert_int_equal(json_object_array_length(json_object_object_get(ok->body, "argv")), 1024);

        /* seatctl reads seatd's replies, which may be long lists, without those caps. */
        _cleanup_free_ char *list = unit_repeat_count("{\"id\":3,\"type\":\"result\",\"result\":{\"archives\":[",
                                                      "{\"name\":\"a\",\"size\":1}", 10000, "]}}");
        refused(list, 0, CONTROL_ERR_TOO_LARGE);
        _cleanup_control_msg_ ControlMsg *reply = NULL;
        assert_int_equal(control_msg_parse_reply(list, strlen(list), &reply, &err), 0);
        assert_int_equal(json_object_array_length(json_object_object_get(reply->body, "archives")), 10000);
}

TEST(format_roundtrip) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        size_t n;
        _cleanup_json_ json_object *params = json_object_new_object();
        json_object_object_add(params, "name", json_object_new_string("debian\n\"x\""));

        assert_int_equal(control_format_request(9, "image.verify", params, &a, &n), 0);
        _cleanup_control_msg_ ControlMsg *m = parse(a);
        const char *name = NULL;
        assert_int_equal(json_get_string(m->body, "name", true, 100, &name), 0);
        assert_string_equal(name, "debian\n\"x\"");

        assert_int_equal(control_format_error(9, CONTROL_ERR_NOT_FOUND, "no image 'x'", &b, &n), 0);
        assert_string_equal(b, "{\"id\":9,\"type\":\"error\",\"error\":{\"code\":\"not_found\",\"message\":\"no image 'x'\"}}\n");
        assert_int_equal(control_format_progress(9, "copy", 5, 10, &c, &n), 0);
        assert_string_equal(c, "{\"id\":9,\"type\":\"progress\",\"progress\":{\"what\":\"copy\",\"done\":5,\"total\":10}}\n");
        assert_int_equal(control_format_result(9, NULL, &d, &n), 0);
        assert_string_equal(d, "{\"id\":9,\"type\":\"result\",\"result\":{}}\n");

        char *none = NULL;
        assert_int_equal(control_format_request(0, "hello", NULL, &none, &n), -EINVAL);
        assert_int_equal(control_format_event(1, "result", NULL, &none, &n), -EINVAL);
}

TEST_MAIN("control-proto")
