/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web's one-time links (web/links.c): the record's text, and a link's life in a real
 * state directory: made, taken once, gone; an expired one refused and removed; a record
 * that is not one refused like a missing one.
 */
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

#include "links.h"
#include "unit-source.h"

#define TOKEN "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

TEST(parse) {
        WebLink l;
        const char *good = "seat-web-link 1\nseat s1a2b3c4\ntoken " TOKEN "\nexpires 1767225600\n";
        assert_int_equal(web_link_parse(good, strlen(good), &l), 0);
        assert_string_equal(l.seat, "s1a2b3c4");
        assert_string_equal(l.token, TOKEN);
        assert_int_equal(l.expires, 1767225600);
        char back[WEB_LINK_RECORD_MAX + 1];
        assert_int_equal(web_link_format(&l, back, sizeof(back)), (int) strlen(good));
        assert_string_equal(back, good);

        static const char *const bad[] = {
                "",
                "seat-web-link 2\nseat s1\ntoken " TOKEN "\nexpires 1\n",          /* another version */
                "seat-web-link 1\nseat ../x\ntoken " TOKEN "\nexpires 1\n",        /* not a seat id */
                "seat-web-link 1\nseat s1\ntoken " TOKEN "0\nexpires 1\n",         /* token too long */
                "seat-web-link 1\nseat s1\ntoken ABCDEF\nexpires 1\n",             /* not a token */
                "seat-web-link 1\nseat s1\ntoken " TOKEN "\nexpires -1\n",         /* a sign */
                "seat-web-link 1\nseat s1\ntoken " TOKEN "\nexpires 1\nextra 1\n", /* more */
                "seat-web-link 1\nseat s1\ntoken " TOKEN "\nexpires 1",            /* cut */
                "seat-web-link 1\ntoken " TOKEN "\nseat s1\nexpires 1\n",          /* out of order */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                if (web_link_parse(bad[i], strlen(bad[i]), &l) != -EBADMSG)
                        fail_msg("accepted bad record %zu", i);
}

TEST(life) {
        char dir[] = "/tmp/test-web-links.XXXXXX", path[256], id[WEB_SESSION_ID_LEN + 1], id2[WEB_SESSION_ID_LEN + 1];
        assert_non_null(mkdtemp(dir));
        WebConfig c = { .state_dir = dir };
        WebLink l = { .seat = "s1a2b3c4", .token = TOKEN, .expires = 2000000000 }, got;
        _cleanup_error_ SeatError *err = NULL;

        assert_int_equal(web_link_issue(&c, &l, id, &err), 0);
        assert_true(web_session_id_valid(id));
        snprintf(path, sizeof(path), "%s/links/%s", dir, id);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        snprintf(path, sizeof(path), "%s/links", dir);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0700);

        /* Once: the second take finds nothing. */
        assert_int_equal(web_link_take(&c, id, 1767225600, &got), 0);
        assert_string_equal(got.seat, "s1a2b3c4");
        assert_string_equal(got.token, TOKEN);
        assert_int_equal(web_link_take(&c, id, 1767225600, &got), -ENOENT);

        /* Expired: refused, and gone all the same. */
        l.expires = 1000;
        assert_int_equal(web_link_issue(&c, &l, id2, &err), 0);
        assert_string_not_equal(id, id2);
        assert_int_equal(web_link_take(&c, id2, 1767225600, &got), -ETIME);
        assert_int_equal(web_link_take(&c, id2, 1, &got), -ENOENT);

        /* Not a record, not an id, a symlink: like a missing link. */
        const char *junk_id = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
        snprintf(path, sizeof(path), "%s/links/%s", dir, junk_id);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs("not a link\n", f);
        fclose(f);
        assert_int_equal(web_link_take(&c, junk_id, 1, &got), -ENOENT);
        assert_int_equal(access(path, F_OK), -1); /* taken and removed */
        assert_int_equal(web_link_take(&c, "../../etc/passwd", 1, &got), -ENOENT);
        const char *sym_id = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB";
        snprintf(path, sizeof(path), "%s/links/%s", dir, sym_id);
        assert_int_equal(symlink("/etc/hostname", path), 0);
        assert_int_equal(web_link_take(&c, sym_id, 1, &got), -ENOENT);

        assert_int_equal(unit_remove_tree(dir), 0);
}

TEST_MAIN("web-links")
