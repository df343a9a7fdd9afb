/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The facilitator's side of seat-web: the facilitators file (parse, set, atomic save),
 * argon2id hashes (unknown names cost a verify too), sessions with their CSRF tokens, the
 * CSRF header and the handout's names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "fac-parse.h"
#include "fac-session.h"
#include "facilitators.h"

#define H1 "$argon2id$v=19$m=65536,t=3,p=1$qAJM1LvULsgcoZc3PUIhTg$A8mIPjcsbzGEvlXS9U+wznS+b5QWhDbzJVBa/COTtmc"

static FacUsers users;

static int parse(const char *s) {
        return fac_users_parse(s, strlen(s), &users);
}

TEST(file_parse) {
        assert_int_equal(parse(""), 0);
        assert_int_equal(users.n, 0);
        assert_int_equal(parse("# facilitators\n\nalice:" H1 "\nbob.b-2:" H1), 0);
        assert_int_equal(users.n, 2);
        assert_string_equal(users.u[1].name, "bob.b-2");
        assert_non_null(fac_users_find(&users, "alice"));
        assert_null(fac_users_find(&users, "carol"));
        /* Refused whole: a bad name, a hash of another kind, a name twice, no colon,
         * spaces, a NUL, a name over the cap. */
        assert_int_equal(parse("Alice:" H1 "\n"), -EBADMSG);
        assert_int_equal(parse("alice:$argon2i$v=19$m=4096,t=3,p=1$x$y\n"), -EBADMSG);
        assert_int_equal(parse("alice:" H1 "\nalice:" H1 "\n"), -EBADMSG);
        assert_int_equal(parse("alice\n"), -EBADMSG);
        assert_int_equal(parse("alice: " H1 "\n"), -EBADMSG);
        assert_int_equal(parse("alice:" H1 ":x\n"), -EBADMSG);
        assert_int_equal(fac_users_parse("a:\0b", 4, &users), -EBADMSG);
        assert_int_equal(users.n, 0);
        assert_int_equal(parse("abcdefghijklmnopqrstuvwxyz0123456:" H1 "\n"), -EBADMSG);
        /* More names than the table holds. */
        size_t size = (FAC_USERS_MAX + 1) * (sizeof(H1) + 8) + 1, len = 0;
        char *big = malloc(size);
        assert_non_null(big);
        for (int i = 0; i <= FAC_USERS_MAX; i++)
                len += (size_t) snprintf(big + len, size - len, "u%d:%s\n", i, H1);
        assert_int_equal(fac_users_parse(big, len, &users), -EBADMSG);
        free(big);
}

TEST(file_set_and_save) {
        char dir[] = "/tmp/test-web-fac-XXXXXX", path[64];
        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/facilitators", dir);
        assert_int_equal(fac_users_load(path, &users), -ENOENT);
        memset(&users, 0, sizeof(users));
        assert_int_equal(fac_users_set(&users, "alice", H1), 0);
        assert_int_equal(fac_users_set(&users, "bob", H1), 0);
        assert_int_equal(fac_users_set(&users, "alice", H1 "x"), 0); /* replaced, kept in place */
        assert_int_equal(fac_users_set(&users, "-x", H1), -EINVAL);
        assert_int_equal(fac_users_set(&users, "carol", "plain"), -EINVAL);
        assert_int_equal(users.n, 2);
        assert_int_equal(fac_users_save(path, &users, (uid_t) -1, (gid_t) -1), 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        FacUsers back;
        assert_int_equal(fac_users_load(path, &back), 0);
        assert_int_equal(back.n, 2);
        assert_string_equal(back.u[0].name, "alice");
        assert_string_equal(back.u[0].hash, H1 "x");
        assert_string_equal(back.u[1].name, "bob");
        unlink(path);
        assert_int_equal(rmdir(dir), 0); /* no temp file left behind */
}

static double seconds(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

TEST(hash_verify) {
        char hash[crypto_pwhash_STRBYTES];
        FacUser u = { .name = "alice" };
        assert_int_equal(fac_password_hash("correct horse", 13, hash), 0);
        assert_true(fac_hash_valid(hash));
        assert_non_null(strstr(hash, "m=65536,t=3,"));
        snprintf(u.hash, sizeof(u.hash), "%s", hash);
        assert_true(fac_password_verify(&u, "correct horse", 13));
        assert_false(fac_password_verify(&u, "correct horsf", 13));
        assert_false(fac_password_verify(&u, "", 0));
        assert_int_equal(fac_password_hash("", 0, hash), -EINVAL);
        /* An unknown name costs a verify like a wrong password (within a wide margin:
         * the point is that it is not ~0). */
        fac_password_verify(NULL, "warm", 4); /* makes the dummy hash once */
        double t0 = seconds();
        assert_false(fac_password_verify(&u, "wrong", 5));
        double known = seconds() - t0;
        t0 = seconds();
        assert_false(fac_password_verify(NULL, "wrong", 5));
        double unknown = seconds() - t0;
        if (unknown < known / 3)
                fail_msg("an unknown name took %.3f s, a wrong password %.3f s", unknown, known);
}

TEST(sessions_csrf) {
        _cleanup_(fac_sessions_freep) FacSessions *t = fac_sessions_new(2, 1000, 5000);
        char id1[WEB_SESSION_ID_LEN + 1], id2[WEB_SESSION_ID_LEN + 1], id3[WEB_SESSION_ID_LEN + 1];
        assert_non_null(t);
        assert_int_equal(fac_session_open(t, "alice", 0, id1), 0);
        assert_int_equal(fac_session_open(t, "bob", 10, id2), 0);
        assert_int_equal(fac_session_open(t, "Not valid", 10, id3), -EINVAL);
        FacSession *s = fac_session_find(t, id1, 500);
        assert_non_null(s);
        assert_string_equal(s->name, "alice");
        assert_true(web_session_id_valid(s->csrf));
        assert_string_not_equal(s->csrf, s->id);
        assert_true(fac_session_csrf_ok(s, s->csrf));
        char other[FAC_CSRF_LEN + 1];
        snprintf(other, sizeof(other), "%s", s->csrf);
        other[0] = other[0] == 'A' ? 'B' : 'A';
        assert_false(fac_session_csrf_ok(s, other));
        assert_false(fac_session_csrf_ok(s, ""));
        /* bob's CSRF token is not alice's */
        FacSession *b = fac_session_find(t, id2, 500);
        assert_false(fac_session_csrf_ok(s, b->csrf));
        /* Idle past 1 s: gone. At most 5 s in all. */
        assert_null(fac_session_find(t, id2, 1600));
        assert_non_null(fac_session_find(t, id1, 1400));
        assert_null(fac_session_find(t, id1, 5001));
        assert_null(fac_session_find(t, "short", 0));
}

TEST(csrf_header) {
        char out[FAC_CSRF_LEN + 1];
        const char *tok = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ-_01234";
        assert_int_equal(fac_csrf_get(tok, strlen(tok), out), 0);
        assert_string_equal(out, tok);
        char padded[64];
        snprintf(padded, sizeof(padded), " \t%s ", tok);
        assert_int_equal(fac_csrf_get(padded, strlen(padded), out), 0);
        assert_int_equal(fac_csrf_get(tok, strlen(tok) - 1, out), -EBADMSG);
        assert_int_equal(fac_csrf_get("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ+/01234", 43, out), -EBADMSG);
        assert_int_equal(fac_csrf_get("abcdefghijklmnopqrstu xyzABCDEFGHIJ-_01234", 43, out), -EBADMSG);
        assert_int_equal(fac_csrf_get("", 0, out), -EBADMSG);
}

TEST(form) {
        char out[128];
        const char *body = "csrf=abc&image=test-image&names=carol%0D%0Adave%0A+eve%09";
        assert_int_equal(fac_form_get(body, strlen(body), "names", out, sizeof(out)), 0);
        assert_string_equal(out, "carol\r\ndave\n eve\t");
        assert_int_equal(fac_form_get(body, strlen(body), "image", out, sizeof(out)), 0);
        assert_string_equal(out, "test-image");
        assert_int_equal(fac_form_get(body, strlen(body), "nope", out, sizeof(out)), -ENOENT);
        assert_int_equal(fac_form_get("a=1&a=2", 7, "a", out, sizeof(out)), -ENOTUNIQ);
        assert_int_equal(fac_form_get("a=%00", 5, "a", out, sizeof(out)), -EBADMSG);
        assert_int_equal(fac_form_get("a=%1b", 5, "a", out, sizeof(out)), -EBADMSG);   /* ESC */
        assert_int_equal(fac_form_get("a=1&b=%z1", 9, "a", out, sizeof(out)), -EBADMSG); /* another field's */
        assert_int_equal(fac_form_get("a=%4", 4, "a", out, sizeof(out)), -EBADMSG);
        assert_int_equal(fac_form_get("=1", 2, "a", out, sizeof(out)), -EBADMSG);
        assert_int_equal(fac_form_get("a=12345", 7, "a", out, 4), -E2BIG);
}

TEST(names) {
        char names[FAC_HANDOUT_MAX][FAC_PARTICIPANT_MAX + 1];
        size_t n = 99;
        const char *ok = "alice\r\n  Bob Smith \n\n carol@example.org\n";
        assert_int_equal(fac_names_parse(ok, strlen(ok), names, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(names[1], "Bob Smith");
        assert_string_equal(names[2], "carol@example.org");
        assert_int_equal(fac_names_parse("", 0, names, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(fac_names_parse("a\na\n", 4, names, &n), -EBADMSG);     /* twice */
        assert_int_equal(fac_names_parse("a<b>\n", 5, names, &n), -EBADMSG);     /* seatd would refuse */
        assert_int_equal(fac_names_parse("a\"b\n", 4, names, &n), -EBADMSG);
        char many[FAC_HANDOUT_MAX * 6 + 16];
        size_t len = 0;
        for (int i = 0; i <= FAC_HANDOUT_MAX; i++)
                len += (size_t) snprintf(many + len, sizeof(many) - len, "p%d\n", i);
        assert_int_equal(fac_names_parse(many, len, names, &n), -E2BIG);
        assert_true(fac_participant_valid("x"));
        assert_false(fac_participant_valid(" x"));
        assert_false(fac_participant_valid(""));
}

TEST_MAIN("web-facilitators")
