/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evidence/archive.c: sealing, verifying and opening evidence archives. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "../lib/seat-test.h"
#include <sodium.h>

#include "evidence/archive.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "unit-source.h"

static char dir[] = "/tmp/seatd-test-archive-XXXXXX";
static SeatSecretKey *host;
static SeatPublicKey host_pk;
static SeatBoxSecretKey *fac;
static SeatBoxPublicKey fac_pk;
static uint8_t akey[AUDIT_KEY_BYTES];
static char audit_path[256], data_path[256], link_path[256], archive_path[256];
static const char SESSION[] = "00112233445566778899aabbccddeeff";

static void write_audit(void) {
        AuditLog *log = NULL;
        assert_int_equal(audit_log_open(audit_path, akey, AUDIT_LOG_NO_SYNC, &log, NULL), 0);
        assert_int_equal(audit_log_append(log, "tool.exec", NULL, NULL), 0);
        assert_int_equal(audit_log_close(log, NULL), 0);
}

static int setup(void **state) {
        if (!mkdtemp(dir) || signing_init() < 0)
                return -1;
        if (seat_secret_key_generate(&host) < 0 || seat_box_key_generate(&fac) < 0)
                return -1;
        seat_secret_key_public(host, &host_pk);
        seat_box_key_public(fac, &fac_pk);
        audit_key_generate(akey);
        snprintf(audit_path, sizeof(audit_path), "%s/audit.log", dir);
        snprintf(data_path, sizeof(data_path), "%s/data", dir);
        snprintf(link_path, sizeof(link_path), "%s/link", dir);
        snprintf(archive_path, sizeof(archive_path), "%s/a.sev", dir);
        write_audit();
        uint8_t buf[200000];
        randombytes_buf(buf, sizeof(buf));
        if (write_file_atomic(data_path, buf, sizeof(buf), 0600) < 0 || symlink("/etc/passwd", link_path) < 0)
                return -1;
        return 0;
}

static int teardown(void **state) {
        seat_secret_key_free(host);
        seat_box_secret_key_free(fac);
        return unit_remove_tree(dir);
}

static int seal(const char *out, const ArchiveInput *in, size_t n, uint64_t cap, SeatError **e) {
        ArchiveSealParams p = {
                .seat_id = "seat-1", .session = SESSION, .inputs = in, .n_inputs = n, .host_key = host,
                .facilitator = &fac_pk, .audit_key = akey, .max_member_size = cap,
        };
        return archive_seal(out, &p, e);
}

static const ArchiveInput std_inputs[] = {
        { .name = "audit.log", .role = "audit", .path = audit_path },
        { .name = "../../etc/evil\x1b[31m", .role = "file", .path = data_path },
};

TEST(roundtrip) {
        ArchiveManifest *m = NULL;
        SeatError *e = NULL;
        char out[300];

        assert_int_equal(seal(archive_path, std_inputs, 2, 0, &e), 0);
        assert_int_equal(archive_verify(archive_path, &host_pk, "seat-1", SESSION, &m, &e), 0);
        assert_int_equal(m->n_members, 2);
        assert_true(archive_name_is_safe(m->members[1].name));
        assert_null(strchr(m->members[1].origin, '\x1b'));
        m = archive_manifest_free(m);

        snprintf(out, sizeof(out), "%s/out", dir);
        assert_int_equal(archive_open(archive_path, &host_pk, fac, out, &m, &e), 0);
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", out, m->members[1].name);
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t la, lb;
        assert_int_equal(read_file_capped(p, 1 << 20, &a, &la), 0);
        assert_int_equal(read_file_capped(data_path, 1 << 20, &b, &lb), 0);
        assert_int_equal(la, lb);
        assert_memory_equal(a, b, la);
        m = archive_manifest_free(m);
        /* a second open into the same directory refuses, and leaves no partial files */
        assert_int_equal(archive_open(archive_path, &host_pk, fac, out, NULL, &e), -EEXIST);
        e = seat_error_free(e);
        /* sealing over an existing archive is refused */
        assert_int_equal(seal(archive_path, std_inputs, 2, 0, &e), -EEXIST);
        e = seat_error_free(e);
}

TEST(expected_seat) {
        SeatError *e = NULL;
        assert_int_equal(archive_verify(archive_path, &host_pk, "seat-2", NULL, NULL, &e), -EXDEV);
        e = seat_error_free(e);
        assert_int_equal(archive_verify(archive_path, &host_pk, NULL, "ffffffffffffffffffffffffffffffff", NULL, &e),
                         -EXDEV);
        e = seat_error_free(e);
}

TEST(flips_and_truncation) {
        _cleanup_free_ char *buf = NULL;
        size_t len;
        assert_int_equal(read_file_capped(archive_path, 1 << 24, &buf, &len), 0);
        assert_int_equal(archive_verify_buffer(buf, len, &host_pk, NULL, NULL, NULL, NULL), 0);
        for (size_t off = 0; off < len; off += len / 97 + 1) {
                buf[off] ^= 0x40;
                SeatError *e = NULL;
                assert_true(archive_verify_buffer(buf, len, &host_pk, NULL, NULL, NULL, &e) < 0);
                assert_non_null(e);
                seat_error_free(e);
                buf[off] ^= 0x40;
        }
        for (size_t cut = 0; cut < len; cut += len / 31 + 1) {
                SeatError *e = NULL;
                assert_true(archive_verify_buffer(buf, cut, &host_pk, NULL, NULL, NULL, &e) < 0);
                seat_error_free(e);
        }
}

TEST(wrong_keys) {
        SeatSecretKey *other = NULL;
        SeatPublicKey other_pk;
        SeatBoxSecretKey *other_fac = NULL;
        SeatError *e = NULL;
        char out[300];
        assert_int_equal(seat_secret_key_generate(&other), 0);
        seat_secret_key_public(other, &other_pk);
        assert_int_equal(archive_verify(archive_path, &other_pk, NULL, NULL, NULL, &e), -ENOKEY);
        e = seat_error_free(e);
        assert_int_equal(seat_box_key_generate(&other_fac), 0);
        snprintf(out, sizeof(out), "%s/out-other", dir);
        assert_int_equal(archive_open(archive_path, &host_pk, other_fac, out, NULL, &e), -ENOKEY);
        e = seat_error_free(e);
        seat_secret_key_free(other);
        seat_box_secret_key_free(other_fac);
}

TEST(inputs) {
        SeatError *e = NULL;
        char out[300];
        ArchiveInput in[] = { { .name = "link", .role = "file", .path = link_path } };
        snprintf(out, sizeof(out), "%s/sym.sev", dir);
        assert_int_equal(seal(out, in, 1, 0, &e), -ELOOP);
        e = seat_error_free(e);
        struct stat st;
        assert_int_equal(stat(out, &st), -1);

        /* capped member */
        ArchiveManifest *m = NULL;
        snprintf(out, sizeof(out), "%s/capped.sev", dir);
        assert_int_equal(seal(out, std_inputs, 2, 1000, &e), 0);
        assert_int_equal(archive_verify(out, &host_pk, NULL, NULL, &m, &e), 0);
        assert_true(m->members[1].truncated);
        assert_int_equal(m->members[1].size, 1000);
        assert_int_equal(m->members[1].original_size, 200000);
        archive_manifest_free(m);
}

/* p sealed into dir/name (that path written to out), then verified: its manifest. */
static ArchiveManifest *seal_verified(const ArchiveSealParams *p, const char *name, char *out, size_t size) {
        ArchiveManifest *m = NULL;
        SeatError *e = NULL;
        snprintf(out, size, "%s/%s", dir, name);
        assert_int_equal(archive_seal(out, p, &e), 0);
        assert_int_equal(archive_verify(out, &host_pk, NULL, NULL, &m, &e), 0);
        return m;
}

/* A manifest, valid but for one summary field (summary: '"guest":{...}'), is refused with
 * a message that names the summary. */
static void assert_summary_refused(const char *summary, const char *what) {
        ArchiveManifest *m = NULL;
        SeatError *e = NULL;
        char json[2048];

        snprintf(json, sizeof(json),
                 "{\"format\":\"seatd-evidence\",\"version\":1,\"seat\":\"s1\",\"session\":\"%s\",\"image\":\"\","
                 "\"created\":1,\"facilitator_key_id\":\"0011223344556677\",\"chunk_size\":65536,"
                 "\"stream_size\":2048,\"chunks\":1,\"payload_size\":1,\"payload_blake2b\":\"%0128d\",%s,"
                 "\"members\":[{\"path\":\"members/0001\",\"name\":\"0001-a\",\"origin\":\"a\",\"role\":\"file\","
                 "\"size\":1,\"truncated\":false,\"original_size\":1,\"blake2b\":\"%0128d\"}]}",
                 SESSION, 0, summary, 0);
        assert_true(archive_manifest_parse(json, strlen(json), &m, &e) < 0);
        assert_non_null(e);
        assert_non_null(strstr(e->message, what));
        e = seat_error_free(e);
}

/* Guest files: a summary of what was taken (signed, in the manifest), symlinks as records
 * of their target, files already cut before sealing. */
TEST(guest_collection) {
        SeatError *e = NULL;
        ArchiveManifest *m = NULL;
        char out[300], target[300], opened[300];
        snprintf(target, sizeof(target), "%s/link-target", dir);
        assert_int_equal(write_file_atomic(target, "/etc/shadow", 11, 0600), 0);
        ArchiveInput in[] = {
                { .name = "audit.log", .role = "audit", .path = audit_path },
                { .name = "guest/root/link", .role = "symlink", .path = target },
                { .name = "guest/root/big", .role = "file", .path = data_path, .original_size = 5000000 },
        };
        ArchiveCollection c = { .complete = false, .files = 1, .symlinks = 1, .bytes = 200011, .truncated = 1,
                                .skipped = 3, .max_bytes = 1 << 20, .max_file_bytes = 200000, .max_files = 2 };
        ArchiveSealParams p = { .seat_id = "seat-1", .session = SESSION, .inputs = in, .n_inputs = 3, .host_key = host,
                                .facilitator = &fac_pk, .audit_key = akey, .collection = &c };
        m = seal_verified(&p, "guest.sev", out, sizeof(out));
        assert_true(m->has_collection);
        assert_false(m->collection.complete);
        assert_int_equal(m->collection.skipped, 3);
        assert_int_equal(m->collection.max_files, 2);
        assert_string_equal(m->members[1].role, "symlink");
        assert_true(m->members[2].truncated);
        assert_int_equal(m->members[2].size, 200000);
        assert_int_equal(m->members[2].original_size, 5000000);
        m = archive_manifest_free(m);
        /* the link opens as a plain file holding its target: nothing is followed */
        snprintf(opened, sizeof(opened), "%s/guest-out", dir);
        assert_int_equal(archive_open(out, &host_pk, fac, opened, &m, &e), 0);
        char lp[512];
        struct stat st;
        snprintf(lp, sizeof(lp), "%s/%s", opened, m->members[1].name);
        assert_int_equal(lstat(lp, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, 11);
        m = archive_manifest_free(m);

        /* a file larger than what it was said to be cut from is refused */
        in[2].original_size = 10;
        snprintf(out, sizeof(out), "%s/guest2.sev", dir);
        assert_int_equal(archive_seal(out, &p, &e), -EINVAL);
        e = seat_error_free(e);

        /* the summary must agree with itself and with the members */
        static const char *bad[] = {
                "\"guest\":{\"complete\":true,\"files\":1,\"symlinks\":0,\"bytes\":1,\"truncated\":1,\"skipped\":0,"
                "\"max_bytes\":1,\"max_file_bytes\":1,\"max_files\":1}",
                "\"guest\":{\"complete\":true,\"files\":1,\"symlinks\":2,\"bytes\":1,\"truncated\":0,\"skipped\":0,"
                "\"max_bytes\":1,\"max_file_bytes\":1,\"max_files\":1}",
                "\"guest\":{\"complete\":true,\"files\":-1,\"symlinks\":0,\"bytes\":1,\"truncated\":0,\"skipped\":0,"
                "\"max_bytes\":1,\"max_file_bytes\":1,\"max_files\":1}",
                "\"guest\":[]",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_summary_refused(bad[i], "guest");
}

/* The capture's summary: its files and bytes counted from the capture members whatever the
 * caller said, "complete" from its counts, signed; a manifest that disagrees is refused. */
TEST(capture_summary) {
        char out[300];
        ArchiveInput in[] = {
                { .name = "audit.log", .role = "audit", .path = audit_path },
                { .name = "capture-0001.pcapng", .role = "capture", .path = data_path },
                { .name = "capture-0003.pcapng", .role = "capture", .path = data_path },
        };
        ArchiveCapture c = { .complete = true, .snaplen = 200, .max_bytes = 1 << 20, .files = 99, .bytes = 1,
                             .packets = 5000, .bytes_on_wire = 7000000, .packets_cut = 5000, .bytes_cut = 6000000,
                             .files_rotated = 1, .packets_rotated = 700, .bytes_rotated = 131000 };
        ArchiveSealParams p = { .seat_id = "seat-1", .session = SESSION, .inputs = in, .n_inputs = 3, .host_key = host,
                                .facilitator = &fac_pk, .audit_key = akey, .capture = &c };
        ArchiveManifest *m = seal_verified(&p, "capture.sev", out, sizeof(out));
        assert_true(m->has_capture);
        assert_false(m->capture.complete);
        assert_int_equal(m->capture.files, 2);
        assert_int_equal(m->capture.bytes, 400000);
        assert_int_equal(m->capture.packets_rotated, 700);
        assert_int_equal(m->capture.snaplen, 200);
        m = archive_manifest_free(m);

        static const char *bad[] = {
                /* complete, yet packets were cut */
                "\"capture\":{\"complete\":true,\"snaplen\":1,\"max_bytes\":1,\"files\":0,\"bytes\":0,\"packets\":1,"
                "\"bytes_on_wire\":9,\"packets_cut\":1,\"bytes_cut\":1,\"files_rotated\":0,\"packets_rotated\":0,"
                "\"bytes_rotated\":0,\"packets_unwritten\":0,\"kernel_drops\":0,\"restarts\":0}",
                /* one capture file claimed, none among the members */
                "\"capture\":{\"complete\":false,\"snaplen\":1,\"max_bytes\":1,\"files\":1,\"bytes\":1,\"packets\":1,"
                "\"bytes_on_wire\":9,\"packets_cut\":1,\"bytes_cut\":1,\"files_rotated\":0,\"packets_rotated\":0,"
                "\"bytes_rotated\":0,\"packets_unwritten\":0,\"kernel_drops\":0,\"restarts\":0}",
                /* more cut than seen */
                "\"capture\":{\"complete\":false,\"snaplen\":1,\"max_bytes\":1,\"files\":0,\"bytes\":0,\"packets\":1,"
                "\"bytes_on_wire\":9,\"packets_cut\":2,\"bytes_cut\":1,\"files_rotated\":0,\"packets_rotated\":0,"
                "\"bytes_rotated\":0,\"packets_unwritten\":0,\"kernel_drops\":0,\"restarts\":0}",
                /* a count missing */
                "\"capture\":{\"complete\":false,\"snaplen\":1}",
                "\"capture\":{\"complete\":false,\"snaplen\":1,\"max_bytes\":1,\"files\":0,\"bytes\":0,\"packets\":1,"
                "\"bytes_on_wire\":9,\"packets_cut\":1,\"bytes_cut\":1,\"files_rotated\":0,\"packets_rotated\":0,"
                "\"bytes_rotated\":0,\"packets_unwritten\":0,\"kernel_drops\":0,\"restarts\":0,\"reason\":\"a\\u001bb\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_summary_refused(bad[i], "capture");
}

TEST(manifest_parse) {
        static const char *bad[] = {
                "{}",
                "[]",
                "{\"format\":\"seatd-evidence\",\"version\":2}",
                "{\"format\":\"seatd-evidence\",\"version\":1,\"seat\":\"../x\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ArchiveManifest *m = NULL;
                SeatError *e = NULL;
                assert_true(archive_manifest_parse(bad[i], strlen(bad[i]), &m, &e) < 0);
                assert_non_null(e);
                seat_error_free(e);
        }
        assert_false(archive_name_is_safe(".."));
        assert_false(archive_name_is_safe("a/b"));
        assert_false(archive_name_is_safe(".hidden"));
        assert_false(archive_name_is_safe(""));
        assert_true(archive_name_is_safe("0001-audit.log"));
}

TEST_MAIN_FIXTURE("archive", setup, teardown)
