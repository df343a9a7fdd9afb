/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "../lib/seat-test.h"

#include "common/jsonframe.h"
#include "unit-cases.h"

static void feed_all(FrameReader *r, const char *s) {
        size_t len = strlen(s);
        assert_int_equal(frame_reader_feed(r, s, len), len);
}

TEST(frames_split_and_joined) {
        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(64);
        const char *f;
        size_t n;

        feed_all(r, "{\"a\":1}\n{\"b\"");
        assert_int_equal(frame_reader_next(r, &f, &n), 1);
        assert_int_equal(n, 7);
        assert_memory_equal(f, "{\"a\":1}", 7);
        assert_int_equal(frame_reader_next(r, &f, &n), 0);
        assert_int_equal(frame_reader_pending(r), 4);
        feed_all(r, ":2}\n\n");
        assert_int_equal(frame_reader_next(r, &f, &n), 1);
        assert_memory_equal(f, "{\"b\":2}", 7);
        assert_int_equal(frame_reader_next(r, &f, &n), 1); /* an empty line is a frame */
        assert_int_equal(n, 0);
        assert_int_equal(frame_reader_next(r, &f, &n), 0);
}

TEST(oversized_frame_discarded) {
        _cleanup_(frame_reader_freep) FrameReader *r = frame_reader_new(8);
        const char *f;
        size_t n;
        char big[40];

        /* Exactly max_frame bytes is fine. */
        feed_all(r, "12345678\n");
        assert_int_equal(frame_reader_next(r, &f, &n), 1);
        assert_int_equal(n, 8);

        /* One more is not: reported once, then skipped up to its newline. */
        memset(big, 'x', sizeof(big));
        size_t off = 0;
        int e2big = 0;
        while (off < sizeof(big)) {
                off += frame_reader_feed(r, big + off, sizeof(big) - off);
                int k;
                while ((k = frame_reader_next(r, &f, &n)) != 0) {
                        assert_int_equal(k, -E2BIG);
                        e2big++;
                }
        }
        assert_int_equal(e2big, 1);
        assert_true(frame_reader_pending(r) <= 9);
        feed_all(r, "tail\nok\n");
        assert_int_equal(frame_reader_next(r, &f, &n), 1);
        assert_int_equal(n, 2);
        assert_memory_equal(f, "ok", 2);
}

TEST(parse) {
        json_object *o = NULL;

        assert_int_equal(json_frame_parse("{\"a\":[1,2]}", 11, 8, &o), 0);
        json_object_put(o);
        assert_int_equal(json_frame_parse(" {} \r", 5, 8, &o), 0);
        json_object_put(o);
        assert_int_equal(json_frame_parse("[1]", 3, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{} {}", 5, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{\"a\":", 5, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{\"a\":\"\xc3\x28\"}", 10, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{\"a\":1}\0", 8, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{\"a\":[[[[[[[[[[1]]]]]]]]]]}", 27, 8, &o), -ELOOP);
        assert_int_equal(json_frame_parse("", 0, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{a:1}", 5, 8, &o), -EBADMSG);
        assert_int_equal(json_frame_parse("{\"a\":1,}", 8, 8, &o), -EBADMSG);
}

/* The frame cap bounds bytes, not what json-c makes of them: containers and values are
 * counted before anything is allocated. */
TEST(limits) {
        const JsonFrameLimits l = { .max_depth = 8, .max_containers = 2, .max_values = 5 };
        json_object *o = NULL;

        /* 1 (the object) + '{' + ':' + ',' + ':' = 5 */
        assert_int_equal(json_frame_parse_limited("{\"a\":1,\"b\":2}", 13, &l, &o), 0);
        json_object_put(TAKE_PTR(o));
        assert_int_equal(json_frame_parse_limited("{\"a\":1,\"b\":2,\"c\":3}", 19, &l, &o), -E2BIG);
        assert_null(o);
        assert_int_equal(json_frame_parse_limited("{\"a\":[]}", 8, &l, &o), 0);
        json_object_put(TAKE_PTR(o));
        assert_int_equal(json_frame_parse_limited("{\"a\":[[]]}", 10, &l, &o), -E2BIG);
        /* what strings hold is not structure, escaped quotes included */
        const char *str = "{\"a\":\"[[{{,,::\\\"]]}}\\\\\"}";
        assert_int_equal(json_frame_scan(str, strlen(str), &(JsonFrameLimits) { 8, 1, 3 }), 0);
        assert_int_equal(json_frame_parse_limited(str, strlen(str), &(JsonFrameLimits) { 8, 1, 3 }, &o), 0);
        assert_string_equal(json_object_get_string(json_object_object_get(o, "a")), "[[{{,,::\"]]}}\\");
        json_object_put(TAKE_PTR(o));
        /* the other checks still come first or after: NUL, depth, syntax */
        assert_int_equal(json_frame_parse_limited("{\"a\":1}\0", 8, &l, &o), -EBADMSG);
        assert_int_equal(json_frame_parse_limited("{\"a\":1", 6, &l, &o), -EBADMSG);

        /* 1 MiB of "{}," (about 270 MiB inside json-c): refused by the scan alone. */
        const JsonFrameLimits peer = { .max_depth = 8, .max_containers = 64, .max_values = 4096 };
        _cleanup_free_ char *amp = unit_repeat_len("{\"x\":[", "{}", 1024 * 1024, "]}");
        assert_int_equal(json_frame_scan(amp, strlen(amp), &peer), -E2BIG);
        assert_int_equal(json_frame_parse_limited(amp, strlen(amp), &peer, &o), -E2BIG);
        _cleanup_free_ char *zeros = unit_repeat_len("{\"x\":[", "0", 1024 * 1024, "]}");
        assert_int_equal(json_frame_parse_limited(zeros, strlen(zeros), &peer, &o), -E2BIG);
        assert_null(o);
        /* the same bytes in one string are one value */
        _cleanup_free_ char *one = unit_repeat_len("{\"x\":\"", "{}", 1024 * 1024, "\"}");
        for (char *p = one + 6; p[1]; p++)
                if (*p == ',')
                        *p = ':';
        assert_int_equal(json_frame_parse_limited(one, strlen(one), &peer, &o), 0);
        json_object_put(TAKE_PTR(o));
        /* json_frame_parse (trusted input) has no such caps */
        assert_int_equal(json_frame_parse(zeros, strlen(zeros), 8, &o), 0);
        json_object_put(TAKE_PTR(o));
}

TEST(getters) {
        _cleanup_json_ json_object *o = NULL;
        const char *s = "{\"s\":\"str\",\"i\":42,\"b\":true,\"a\":[\"x\",\"y\"],\"n\":[1],"
                        "\"d\":\"aGk=\",\"big\":99999999999999999999,\"f\":1.5,\"z\":\"a\\u0000b\"}";
        const char *str = NULL;
        int64_t i = -7;
        bool b = false;
        char **l = NULL;
        void *d = NULL;
        size_t n;

        assert_int_equal(json_frame_parse(s, strlen(s), 8, &o), 0);
        assert_int_equal(json_get_string(o, "s", true, 10, &str), 0);
        assert_string_equal(str, "str");
        assert_int_equal(json_get_string(o, "s", true, 2, &str), -EINVAL);
        assert_int_equal(json_get_string(o, "i", true, 10, &str), -EINVAL);
        assert_int_equal(json_get_string(o, "z", true, 10, &str), -EINVAL);
        assert_int_equal(json_get_string(o, "missing", true, 10, &str), -ENOENT);
        assert_int_equal(json_get_int64(o, "missing", false, 0, 10, &i), 0);
        assert_int_equal(i, -7);
        assert_int_equal(json_get_int64(o, "i", true, 0, 100, &i), 0);
        assert_int_equal(i, 42);
        assert_int_equal(json_get_int64(o, "i", true, 0, 41, &i), -EINVAL);
        assert_int_equal(json_get_int64(o, "f", true, 0, 41, &i), -EINVAL);
        assert_int_equal(json_get_int64(o, "big", true, 0, INT64_MAX, &i), -EINVAL);
        assert_int_equal(json_get_int64(o, "s", true, 0, 41, &i), -EINVAL);
        assert_int_equal(json_get_bool(o, "b", true, &b), 0);
        assert_true(b);
        assert_int_equal(json_get_bool(o, "i", true, &b), -EINVAL);
        assert_int_equal(json_get_strv(o, "a", true, 2, 10, &l), 0);
        assert_string_equal(l[0], "x");
        assert_string_equal(l[1], "y");
        assert_null(l[2]);
        l = strv_free(l);
        assert_int_equal(json_get_strv(o, "a", true, 1, 10, &l), -E2BIG);
        assert_int_equal(json_get_strv(o, "n", true, 2, 10, &l), -EINVAL);
        assert_null(l);
        assert_int_equal(json_get_base64(o, "d", true, 2, &d, &n), 0);
        assert_int_equal(n, 2);
        assert_memory_equal(d, "hi", 2);
        free(d);
        assert_int_equal(json_get_base64(o, "d", true, 1, &d, &n), -E2BIG);
        assert_int_equal(json_get_base64(o, "s", true, 100, &d, &n), -EINVAL);
}

TEST(format) {
        _cleanup_json_ json_object *o = json_object_new_object();
        _cleanup_free_ char *s = NULL;
        char *none = NULL;
        size_t n;

        json_object_object_add(o, "k", json_object_new_string("a/b\n"));
        assert_int_equal(json_frame_format(o, 100, &s, &n), 0);
        assert_string_equal(s, "{\"k\":\"a/b\\n\"}\n");
        assert_int_equal(n, strlen(s));
        assert_int_equal(json_frame_format(o, 5, &none, &n), -E2BIG);
}

TEST_MAIN("jsonframe")
