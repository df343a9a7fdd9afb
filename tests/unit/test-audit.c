/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evidence/audit.c: the forward-secure, hash-chained audit log. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../lib/seat-test.h"
#include <sodium.h>

#include "evidence/audit.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "unit-source.h"

static char dir[] = "/tmp/seatd-test-audit-XXXXXX";
static uint8_t key[AUDIT_KEY_BYTES];
static unsigned counter;

static int setup(void **state) {
        if (!mkdtemp(dir) || signing_init() < 0)
                return -1;
        audit_key_generate(key);
        return 0;
}

static int teardown(void **state) {
        return unit_remove_tree(dir);
}

static char *new_path(void) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/log-%u", dir, counter++) > 0);
        return p;
}

/* A closed log with n tool records; returns its path. */
static char *write_log(unsigned n, bool close_it) {
        char *path = new_path();
        AuditLog *log = NULL;
        SeatError *e = NULL;
        assert_int_equal(audit_log_open(path, key, 0, &log, &e), 0);
        for (unsigned i = 0; i < n; i++) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "argv", json_object_new_string("ls -l"));
                json_object_object_add(d, "exit", json_object_new_int((int) i));
                assert_int_equal(audit_log_append(log, "tool.exec", d, &e), 0);
                json_object_put(d);
        }
        if (close_it)
                assert_int_equal(audit_log_close(log, &e), 0);
        else
                audit_log_free(log);
        assert_null(e);
        return path;
}

typedef struct Lines {
        char *l[64];
        size_t n;
} Lines;

static void read_lines(const char *path, Lines *ls) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        assert_int_equal(read_file_capped(path, 1 << 20, &buf, &len), 0);
        ls->n = 0;
        for (char *s = buf, *nl; (nl = strchr(s, '\n')); s = nl + 1)
                ls->l[ls->n++] = strndup(s, (size_t) (nl - s));
}

static char *write_lines(const Lines *ls) {
        char *path = new_path();
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        for (size_t i = 0; i < ls->n; i++)
                fprintf(f, "%s\n", ls->l[i]);
        fclose(f);
        return path;
}

static void free_lines(Lines *ls) {
        for (size_t i = 0; i < ls->n; i++)
                free(ls->l[i]);
        ls->n = 0;
}

static void expect_fail(const char *path, unsigned flags, int code, const char *needle) {
        SeatError *e = NULL;
        int r = audit_log_verify(path, key, flags, NULL, &e);
        assert_int_equal(r, -code);
        assert_non_null(e);
        if (!strstr(e->message, needle))
                fail_msg("message '%s' lacks '%s'", e->message, needle);
        seat_error_free(e);
}

/* A closed log with n tool records, its lines in ls; returns its path. */
static char *write_log_lines(unsigned n, Lines *ls) {
        char *path = write_log(n, true);
        read_lines(path, ls);
        return path;
}

/* The lines (tampered with) written as a log of their own, which verify refuses. */
static void expect_lines_fail(const Lines *ls, int code, const char *needle) {
        _cleanup_free_ char *path = write_lines(ls);
        expect_fail(path, 0, code, needle);
}

TEST(roundtrip) {
        _cleanup_free_ char *p = write_log(5, true);
        uint64_t n = 0;
        SeatError *e = NULL;
        assert_int_equal(audit_log_verify(p, key, 0, &n, &e), 0);
        assert_int_equal(n, 7); /* start, 5, end */
        uint8_t other[AUDIT_KEY_BYTES];
        audit_key_generate(other);
        assert_int_equal(audit_log_verify(p, other, 0, NULL, &e), -EKEYREJECTED);
        e = seat_error_free(e);
}

TEST(open_refuses_existing) {
        _cleanup_free_ char *p = write_log(0, true);
        AuditLog *log = NULL;
        SeatError *e = NULL;
        assert_int_equal(audit_log_open(p, key, 0, &log, &e), -EEXIST);
        seat_error_free(e);
}

TEST(types) {
        _cleanup_free_ char *p = new_path();
        AuditLog *log = NULL;
        SeatError *e = NULL;
        assert_int_equal(audit_log_open(p, key, AUDIT_LOG_NO_SYNC, &log, &e), 0);
        assert_int_equal(audit_log_append(log, "end", NULL, &e), -EINVAL);
        e = seat_error_free(e);
        assert_int_equal(audit_log_append(log, "Bad Type", NULL, &e), -EINVAL);
        e = seat_error_free(e);
        json_object *arr = json_object_new_array();
        assert_int_equal(audit_log_append(log, "x", arr, &e), -EINVAL);
        e = seat_error_free(e);
        json_object_put(arr);
        assert_int_equal(audit_log_append(log, "seat.event", NULL, &e), 0);
        assert_int_equal(audit_log_count(log), 2);
        assert_int_equal(audit_log_close(log, &e), 0);
}

TEST(truncation) {
        _cleanup_free_ char *open_log = write_log(3, false);
        expect_fail(open_log, 0, EPIPE, "without an end record");
        SeatError *e = NULL;
        assert_int_equal(audit_log_verify(open_log, key, AUDIT_VERIFY_SESSION_OPEN, NULL, &e), 0);

        Lines ls;
        _cleanup_free_ char *p = write_log_lines(3, &ls);
        free(ls.l[--ls.n]); /* drop "end" */
        expect_lines_fail(&ls, EPIPE, "without an end record");
        /* cut mid-line */
        _cleanup_free_ char *buf = NULL;
        size_t len;
        assert_int_equal(read_file_capped(p, 1 << 20, &buf, &len), 0);
        _cleanup_free_ char *r = new_path();
        assert_int_equal(write_file_atomic(r, buf, len - 10, 0600), 0);
        expect_fail(r, 0, EPIPE, "incomplete");
        assert_int_equal(write_file_atomic(r, "", 0, 0600), 0);
        expect_fail(r, AUDIT_VERIFY_SESSION_OPEN, EPIPE, "empty");
        free_lines(&ls);
}

TEST(drop_reorder_duplicate) {
        Lines ls;
        _cleanup_free_ char *p = write_log_lines(4, &ls);

        Lines d = ls; /* dropped record 2 */
        memmove(d.l + 2, d.l + 3, (d.n - 3) * sizeof(char *));
        d.n--;
        expect_lines_fail(&d, EILSEQ, "record(s) 2..2 were dropped");

        Lines o = ls; /* 1 and 2 swapped */
        o.l[1] = ls.l[2], o.l[2] = ls.l[1];
        expect_lines_fail(&o, EILSEQ, "line 2: record 2 where record 1");

        Lines u = ls; /* record 3 twice */
        memmove(u.l + 4, u.l + 3, (u.n - 3) * sizeof(char *));
        u.n++;
        expect_lines_fail(&u, EILSEQ, "duplicated or reordered");

        Lines a = ls; /* something after end */
        a.l[a.n++] = ls.l[1];
        expect_lines_fail(&a, EILSEQ, "after the end record");
        free_lines(&ls);
}

TEST(edit) {
        Lines ls;
        _cleanup_free_ char *p = write_log_lines(3, &ls);
        char *x = strstr(ls.l[2], "ls -l");
        assert_non_null(x);
        x[0] = 'r', x[1] = 'm';
        expect_lines_fail(&ls, EKEYREJECTED, "audit record 2 (line 3): the MAC does not verify");
        free_lines(&ls);
}

/* CVE-2023-31439-style: an attacker holding a later epoch's key rewrites an earlier record
 * (keeping seq and prev) and authenticates it with that key. */
TEST(rekeyed_record) {
        Lines ls;
        _cleanup_free_ char *p = write_log_lines(4, &ls);
        uint8_t k[AUDIT_KEY_BYTES], next[AUDIT_KEY_BYTES];
        memcpy(k, key, sizeof(k));
        for (unsigned i = 0; i < 4; i++) { /* k_4: the key after record 3 */
                assert_int_equal(audit_key_evolve(k, next), 0);
                memcpy(k, next, sizeof(k));
        }
        AuditRecord rec;
        SeatError *e = NULL;
        assert_int_equal(audit_record_parse(ls.l[2], strlen(ls.l[2]), &rec, &e), 0);
        char *body = strndup(ls.l[2], rec.body_len);
        char *edit = strstr(body, "ls -l");
        edit[0] = 'r', edit[1] = 'm';
        uint8_t mac[AUDIT_MAC_BYTES];
        char hex[2 * AUDIT_MAC_BYTES + 1];
        assert_int_equal(audit_record_mac(k, rec.seq, rec.prev, body, rec.body_len, mac), 0);
        digest_to_hex(mac, sizeof(mac), hex, sizeof(hex));
        free(ls.l[2]);
        assert_true(asprintf(&ls.l[2], "%s,\"mac\":\"%s\"}", body, hex) > 0);
        audit_record_done(&rec);
        free(body);
        expect_lines_fail(&ls, EKEYREJECTED, "later epoch 4");
        free_lines(&ls);
}

TEST(parse) {
        static const char *bad[] = {
                "",
                "{}",
                "{\"seq\":0}",
                "{\"seq\":-1,\"time\":1,\"type\":\"a\",\"data\":{},\"prev\":\"00\",\"mac\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"seq\":0,\"time\":1,\"type\":\"A B\",\"data\":{},\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"mac\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"seq\":0,\"time\":1,\"type\":\"a\",\"data\":[],\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"mac\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"seq\":0,\"time\":1,\"type\":\"a\",\"data\":{},\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"x\":1,\"mac\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                AuditRecord rec;
                SeatError *e = NULL;
                assert_int_equal(audit_record_parse(bad[i], strlen(bad[i]), &rec, &e), -EBADMSG);
                assert_non_null(e);
                seat_error_free(e);
        }
        static const char good[] = "{\"seq\":3,\"time\":1,\"type\":\"a\",\"data\":{\"k\":[1]},\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\",\"mac\":\"0000000000000000000000000000000000000000000000000000000000000000\"}";
        AuditRecord rec;
        assert_int_equal(audit_record_parse(good, strlen(good), &rec, NULL), 0);
        assert_int_equal(rec.seq, 3);
        assert_string_equal(rec.type, "a");
        audit_record_done(&rec);
}

TEST_MAIN_FIXTURE("audit", setup, teardown)
