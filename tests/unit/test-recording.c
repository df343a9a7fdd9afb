/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Terminal recordings: valid asciicast v2 whatever the guest prints, and capped. */
#include <errno.h>
#include <json-c/json.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/macro.h"
#include "common/utf8.h"
#include "recording.h"
#include "unit-source.h"

static char dir[] = "/tmp/test-recording-XXXXXX";

static char *path_of(const char *name) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        return p;
}

/* The file's lines: line 0 the header, then events; every line valid JSON and UTF-8. */
static size_t read_events(const char *path, json_object **lines, size_t max) {
        char *text = NULL;
        size_t len = 0, n = 0;
        assert_int_equal(read_file_capped(path, 64 << 20, &text, &len), 0);
        assert_true(utf8_is_valid(text, len));
        for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && n < max; l = strtok_r(NULL, "\n", &save)) {
                lines[n] = json_tokener_parse(l);
                assert_non_null(lines[n]);
                n++;
        }
        free(text);
        return n;
}

static const char *event_text(json_object *e, const char *type) {
        assert_true(json_object_is_type(e, json_type_array));
        assert_int_equal(json_object_array_length(e), 3);
        assert_true(json_object_is_type(json_object_array_get_idx(e, 0), json_type_double));
        assert_string_equal(json_object_get_string(json_object_array_get_idx(e, 1)), type);
        return json_object_get_string(json_object_array_get_idx(e, 2));
}

TEST(session) {
        _cleanup_free_ char *p = path_of("a.cast");
        Recording *r = NULL;
        RecordingSpec spec = { .cols = 80, .rows = 24, .command = "sh -l", .max_bytes = 1 << 20 };
        assert_int_equal(recording_open(p, &spec, &r), 0);
        assert_int_equal(recording_open(p, &spec, &(Recording *) { NULL }), -EEXIST); /* never over a file */
        recording_output(r, "hello\r\n", 7);
        /* é (C3 A9) split across two chunks is joined; a lone 0xFF becomes U+FFFD */
        recording_output(r, "caf\xC3", 4);
        recording_output(r, "\xA9 \xFF\x01", 4);
        recording_input(r, "secret", 6); /* record_input is off */
        recording_resize(r, 100, 30);
        assert_int_equal(recording_close(r), 0);

        json_object *l[16] = {};
        size_t n = read_events(p, l, 16);
        assert_int_equal(n, 5);
        assert_int_equal(json_object_get_int(json_object_object_get(l[0], "version")), 2);
        assert_int_equal(json_object_get_int(json_object_object_get(l[0], "width")), 80);
        assert_int_equal(json_object_get_int(json_object_object_get(l[0], "height")), 24);
        assert_string_equal(json_object_get_string(json_object_object_get(l[0], "title")), "sh -l");
        assert_string_equal(event_text(l[1], "o"), "hello\r\n");
        assert_string_equal(event_text(l[2], "o"), "caf");
        assert_string_equal(event_text(l[3], "o"), "\xC3\xA9 \xEF\xBF\xBD\x01");
        assert_string_equal(event_text(l[4], "r"), "100x30");
        for (size_t i = 0; i < n; i++)
                json_object_put(l[i]);
        _cleanup_free_ char *side = path_of("a.cast.dropped");
        assert_int_equal(access(side, F_OK), -1);
}

TEST(input_and_tail) {
        _cleanup_free_ char *p = path_of("b.cast");
        Recording *r = NULL;
        RecordingSpec spec = { .cols = 1, .rows = 1, .max_bytes = 1 << 20, .record_input = true };
        assert_int_equal(recording_open(p, &spec, &r), 0);
        recording_input(r, NULL, 0); /* stdin's end alone */
        recording_input(r, "ls\r", 3);
        recording_output(r, "\xE2\x82", 2); /* the start of € and then nothing: U+FFFD at the end */
        assert_int_equal(recording_close(r), 0);
        json_object *l[8] = {};
        size_t n = read_events(p, l, 8);
        assert_int_equal(n, 3);
        assert_null(json_object_object_get(l[0], "title"));
        assert_string_equal(event_text(l[1], "i"), "ls\r");
        assert_string_equal(event_text(l[2], "o"), "\xEF\xBF\xBD\xEF\xBF\xBD");
        for (size_t i = 0; i < n; i++)
                json_object_put(l[i]);
}

TEST(cap) {
        _cleanup_free_ char *p = path_of("c.cast"), *side = path_of("c.cast.dropped");
        Recording *r = NULL;
        RecordingSpec spec = { .cols = 80, .rows = 24, .max_bytes = 4096 };
        assert_int_equal(recording_open(p, &spec, &r), 0);
        char chunk[1000];
        memset(chunk, 'x', sizeof(chunk));
        for (int i = 0; i < 100; i++)
                recording_output(r, chunk, sizeof(chunk));
        uint64_t dropped = recording_close(r);
        assert_true(dropped > 90000 && dropped < 100000);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_true((uint64_t) st.st_size <= 4096);
        json_object *l[16] = {};
        size_t n = read_events(p, l, 16);
        assert_true(n >= 2);
        assert_non_null(strstr(event_text(l[n - 1], "m"), "recording truncated"));
        for (size_t i = 0; i < n; i++)
                json_object_put(l[i]);
        char *text = NULL;
        assert_int_equal(read_file_capped(side, 64, &text, NULL), 0);
        assert_int_equal(strtoull(text, NULL, 10), dropped);
        free(text);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        return unit_remove_tree(dir);
}

TEST_MAIN_FIXTURE("recording", setup, teardown)
