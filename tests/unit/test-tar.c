/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evidence/tar.c: the ustar stream inside an evidence archive. What tar_header() writes
 * must be a stream GNU tar reads back, and tar_feed() must take a stream that matches the
 * manifest however it is cut into pieces, and refuse, with the member named, every way
 * one can differ from it. */
#include <fcntl.h>
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

#include "evidence/archive-internal.h"
#include "unit-source.h"

#define N_MEMBERS 3
static const size_t sizes[N_MEMBERS] = { 0, 513, 1024 };
static char dir[] = "/tmp/seatd-test-tar-XXXXXX";

typedef struct Stream {
        ArchiveManifest m;
        ArchiveMember members[N_MEMBERS];
        uint8_t *data[N_MEMBERS];
        uint8_t *buf;
        size_t len;
} Stream;

static void append(Stream *s, const void *p, size_t n) {
        s->buf = realloc(s->buf, s->len + n);
        assert_non_null(s->buf);
        memcpy(s->buf + s->len, p, n);
        s->len += n;
}

/* A stream as sealing writes it: each member's header, data and padding, then the
 * two-block trailer; the manifest holds each member's size and BLAKE2b-512. */
static void make_stream(Stream *s) {
        static const uint8_t zero[2 * TAR_BLOCK];
        memset(s, 0, sizeof(*s));
        s->m.members = s->members;
        s->m.n_members = N_MEMBERS;
        for (size_t i = 0; i < N_MEMBERS; i++) {
                ArchiveMember *a = &s->members[i];
                uint8_t block[TAR_BLOCK];
                (void) snprintf(a->path, sizeof(a->path), "members/%04zu", i + 1);
                (void) snprintf(a->name, sizeof(a->name), "file-%zu", i + 1);
                a->size = sizes[i];
                s->data[i] = malloc(sizes[i] + 1);
                assert_non_null(s->data[i]);
                for (size_t j = 0; j < sizes[i]; j++)
                        s->data[i][j] = (uint8_t) ('a' + (i * 7 + j) % 26);
                crypto_generichash(a->digest, sizeof(a->digest), s->data[i], sizes[i], NULL, 0);
                tar_header(a, 1700000000, block);
                append(s, block, TAR_BLOCK);
                append(s, s->data[i], sizes[i]);
                append(s, zero, tar_padded(sizes[i]) - sizes[i]);
        }
        append(s, zero, sizeof(zero));
}

static void stream_done(Stream *s) {
        for (size_t i = 0; i < N_MEMBERS; i++)
                free(s->data[i]);
        free(s->buf);
}

/* Feeds the stream in pieces of `piece` bytes; returns tar_feed's first error. */
static int feed(Stream *s, const uint8_t *buf, size_t len, size_t piece, int fds[N_MEMBERS], SeatError **err) {
        TarReader t = { .m = &s->m, .fds = fds };
        for (size_t off = 0; off < len; off += piece) {
                int r = tar_feed(&t, buf + off, MIN(piece, len - off), err);
                if (r < 0)
                        return r;
        }
        return t.phase == TAR_DONE ? 0 : -EAGAIN;
}

static void open_fds(int fds[N_MEMBERS]) {
        for (size_t i = 0; i < N_MEMBERS; i++) {
                char p[256];
                (void) snprintf(p, sizeof(p), "%s/out-%zu", dir, i);
                fds[i] = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                assert_true(fds[i] >= 0);
        }
}

static void close_fds(int fds[N_MEMBERS]) {
        for (size_t i = 0; i < N_MEMBERS; i++)
                close(fds[i]);
}

static void assert_members(Stream *s, int fds[N_MEMBERS]) {
        for (size_t i = 0; i < N_MEMBERS; i++) {
                uint8_t *got = malloc(sizes[i] + 1);
                assert_non_null(got);
                assert_int_equal(pread(fds[i], got, sizes[i] + 1, 0), (ssize_t) sizes[i]);
                assert_memory_equal(got, s->data[i], sizes[i]);
                free(got);
        }
}

/* Every way of cutting the stream reads the same members back. */
TEST(roundtrip_any_piece) {
        static const size_t pieces[] = { 1, 7, 511, 512, 513, 4096, 1 << 20 };
        Stream s;
        make_stream(&s);
        assert_int_equal(s.len, 3 * TAR_BLOCK + 512 + 1024 + 1024 /* 513 padded */ + 2 * TAR_BLOCK - 512);
        for (size_t k = 0; k < ELEMENTSOF(pieces); k++) {
                int fds[N_MEMBERS];
                SeatError *err = NULL;
                open_fds(fds);
                assert_int_equal(feed(&s, s.buf, s.len, pieces[k], fds, &err), 0);
                assert_null(err);
                assert_members(&s, fds);
                close_fds(fds);
        }
        stream_done(&s);
}

/* What tar_header() writes is a ustar stream GNU tar lists and extracts as it is. */
TEST(gnu_tar_reads_it) {
        Stream s;
        char path[256], cmd[768];
        make_stream(&s);
        (void) snprintf(path, sizeof(path), "%s/stream.tar", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, s.buf, s.len), 0);
        close(fd);
        (void) snprintf(cmd, sizeof(cmd), "cd %s && tar -xf stream.tar 2>&1 && cmp -s members/0002 out-ref-2", dir);
        char ref[256];
        (void) snprintf(ref, sizeof(ref), "%s/out-ref-2", dir);
        fd = open(ref, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, s.data[1], sizes[1]), 0);
        close(fd);
        assert_int_equal(system(cmd), 0);
        (void) snprintf(cmd, sizeof(cmd), "tar -tvf %s/stream.tar | grep -c 'seatd/seatd' | grep -qx 3", dir);
        assert_int_equal(system(cmd), 0);
        stream_done(&s);
}

/* One byte changed at `off` (or the stream cut or extended): refused, with `want` in the
 * error, whatever the piece size. */
static void refused(Stream *s, const uint8_t *buf, size_t len, const char *want) {
        static const size_t pieces[] = { 1, 512, 1 << 20 };
        for (size_t k = 0; k < ELEMENTSOF(pieces); k++) {
                int fds[N_MEMBERS];
                SeatError *err = NULL;
                open_fds(fds);
                int r = feed(s, buf, len, pieces[k], fds, &err);
                assert_true(r < 0);
                if (want) {
                        assert_non_null(err);
                        if (!strstr(err->message, want))
                                fail_msg("error '%s' does not say '%s'", err->message, want);
                }
                seat_error_free(err);
                close_fds(fds);
        }
}

TEST(refusals) {
        Stream s;
        make_stream(&s);
        uint8_t *b = malloc(s.len + TAR_BLOCK);
        assert_non_null(b);
        const size_t h2 = TAR_BLOCK; /* member 2's header: member 1 is empty */

        struct {
                size_t off;
                uint8_t x;
                const char *want;
        } flips[] = {
                { h2 + 148, '7', "tar header of member 2 is malformed" },       /* checksum */
                { h2 + 257, 'U', "tar header of member 2 is malformed" },       /* magic */
                { h2 + 156, '5', "tar header of member 2 is malformed" },       /* a directory */
                { h2 + 7, '9', "malformed" },                                   /* name: checksum first */
                { h2 + TAR_BLOCK + 3, 'Z', "member 2 ('file-2'): its BLAKE2b-512" }, /* data */
                { h2 + TAR_BLOCK + 600, 1, "non-zero padding after member 2" },
                { s.len - 1, 1, "non-zero padding" },                           /* trailer */
        };
        for (size_t i = 0; i < ELEMENTSOF(flips); i++) {
                memcpy(b, s.buf, s.len);
                b[flips[i].off] ^= flips[i].x;
                refused(&s, b, s.len, flips[i].want);
        }

        /* a name or size other than the manifest's, with a valid checksum */
        ArchiveMember other = s.members[1];
        uint8_t block[TAR_BLOCK];
        (void) snprintf(other.path, sizeof(other.path), "members/0009");
        memcpy(b, s.buf, s.len);
        tar_header(&other, 0, block);
        memcpy(b + h2, block, TAR_BLOCK);
        refused(&s, b, s.len, "is not named 'members/0002'");
        other = s.members[1];
        other.size = 512;
        tar_header(&other, 0, block);
        memcpy(b + h2, block, TAR_BLOCK);
        refused(&s, b, s.len, "has another size than the manifest");

        /* cut short: not done; one more block after the trailer: refused */
        memcpy(b, s.buf, s.len);
        refused(&s, b, s.len - 1, NULL);
        memset(b + s.len, 0, TAR_BLOCK);
        refused(&s, b, s.len + TAR_BLOCK, "data after the end of the tar stream");
        free(b);
        stream_done(&s);
}

int main(void) {
        if (!mkdtemp(dir) || sodium_init() < 0)
                return 1;
        int r = seat_tests_run("tar", NULL, NULL);
        (void) unit_remove_tree(dir);
        return r;
}
