/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What seat.exec's audit records keep of a command (seatd/exec-record.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/seat-test.h"

#include "common/jsonframe.h"
#include "seatd/exec-record.h"

static const char *item(json_object *a, size_t i) {
        return json_object_get_string(json_object_array_get_idx(a, i));
}

/* exec_record_strv_capped(), which must say whether it cut and keep n strings */
static json_object *capped(char **l, bool names_only, size_t budget, bool cut, size_t n) {
        bool got_cut;
        json_object *a = exec_record_strv_capped(l, names_only, budget, &got_cut);
        assert_non_null(a);
        assert_int_equal(got_cut, cut);
        assert_int_equal(json_object_array_length(a), n);
        return a;
}

TEST(capped_whole_and_cut) {
        char *argv[] = { "echo", "hello", "world", NULL };
        _cleanup_json_ json_object *all = capped(argv, false, 64, false, 3);
        assert_string_equal(item(all, 2), "world");
        /* 4 + 5 of a budget of 12: "wor" of the third, and nothing after it */
        _cleanup_json_ json_object *some = capped(argv, false, 12, true, 3);
        assert_string_equal(item(some, 2), "wor");
}

TEST(capped_at_a_character_boundary) {
        /* "aé€": 1 + 2 + 3 bytes; a budget of 5 would split '€': only "aé" is kept */
        char *argv[] = { "a\xc3\xa9\xe2\x82\xac", NULL };
        _cleanup_json_ json_object *a = capped(argv, false, 5, true, 1);
        assert_string_equal(item(a, 0), "a\xc3\xa9");
        /* a budget inside the first character keeps nothing of it */
        char *lone[] = { "\xe2\x82\xac", NULL };
        _cleanup_json_ json_object *b = capped(lone, false, 2, true, 0);
        assert_non_null(b);
}

TEST(env_names_only) {
        char *env[] = { "PATH=/bin", "SECRET=hunter2", "NOEQUALS", NULL };
        _cleanup_json_ json_object *a = capped(env, true, 1024, false, 3);
        assert_string_equal(item(a, 0), "PATH");
        assert_string_equal(item(a, 1), "SECRET");
        assert_string_equal(item(a, 2), "NOEQUALS");
        assert_null(strstr(json_object_to_json_string(a), "hunter2"));
}

TEST(counts_and_digests) {
        char *argv[] = { "ab", "c", NULL };
        assert_int_equal(exec_record_strv_count(argv), 2);
        assert_int_equal(exec_record_strv_bytes(argv), 5); /* "ab\0c\0" */
        assert_int_equal(exec_record_strv_count(NULL), 0);
        assert_int_equal(exec_record_strv_bytes(NULL), 0);
        /* the argv's digest is that of its cmdline bytes, NULs included */
        _cleanup_json_ json_object *d1 = exec_record_strv_digest(argv);
        _cleanup_json_ json_object *d2 = exec_record_bytes_digest("ab\0c", 5);
        assert_int_equal(strlen(json_object_get_string(d1)), 128);
        assert_string_equal(json_object_get_string(d1), json_object_get_string(d2));
        /* BLAKE2b-512 of nothing */
        _cleanup_json_ json_object *e = exec_record_bytes_digest("", 0);
        assert_string_equal(json_object_get_string(e),
                            "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
                            "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce");
}

TEST_MAIN("exec-record")
