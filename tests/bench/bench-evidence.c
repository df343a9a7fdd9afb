/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-evidence: audit appends per second (with the fdatasync the log does, and without),
 * and sealing throughput beside raw crypto_secretstream over the same bytes (read the file,
 * encrypt in 64 KiB chunks, write, fsync) in the same run. Medians of RUNS runs.
 * Env: BENCH_DIR (default /var/tmp: a real disk, not tmpfs), BENCH_EVIDENCE_MB (256).
 * Last line: "evidence: appends_per_s=N seal_ratio=R".
 */
#include <fcntl.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "evidence/archive.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"

#define RUNS 3

static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double median(double *v, size_t n) {
        qsort(v, n, sizeof(double), cmp_double);
        return v[n / 2];
}

static void die(const char *what, SeatError *e) {
        fprintf(stderr, "bench-evidence: %s: %s\n", what, e ? e->message : "failed");
        exit(1);
}

static double appends_per_s(const char *dir, unsigned flags, unsigned n) {
        char path[512];
        uint8_t key[AUDIT_KEY_BYTES];
        AuditLog *log = NULL;
        SeatError *e = NULL;
        static unsigned k;

        snprintf(path, sizeof(path), "%s/bench-audit-%d-%u.log", dir, (int) getpid(), k++);
        audit_key_generate(key);
        if (audit_log_open(path, key, flags, &log, &e) < 0)
                die("audit_log_open", e);
        json_object *d = json_object_new_object();
        json_object_object_add(d, "argv", json_object_new_string("/usr/bin/make -j4 all"));
        json_object_object_add(d, "exit", json_object_new_int(0));
        json_object_object_add(d, "stdout_blake2b", json_object_new_string(
                "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
                "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce"));
        double t0 = now_s();
        for (unsigned i = 0; i < n; i++)
                if (audit_log_append(log, "tool.exec", d, &e) < 0)
                        die("audit_log_append", e);
        double t = now_s() - t0;
        json_object_put(d);
        if (audit_log_close(log, &e) < 0)
                die("audit_log_close", e);
        unlink(path);
        return n / t;
}

static double raw_secretstream(const char *in, const char *out) {
        uint8_t key[crypto_secretstream_xchacha20poly1305_KEYBYTES], hdr[crypto_secretstream_xchacha20poly1305_HEADERBYTES];
        crypto_secretstream_xchacha20poly1305_state st;
        uint8_t *buf = malloc(ARCHIVE_CHUNK_SIZE), *ct = malloc(4 + ARCHIVE_CHUNK_SIZE + 17);
        double t0 = now_s();
        int ifd = open(in, O_RDONLY | O_CLOEXEC), ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (ifd < 0 || ofd < 0 || !buf || !ct)
                die("raw: open", NULL);
        struct stat sb;
        fstat(ifd, &sb);
        uint64_t left = (uint64_t) sb.st_size;
        crypto_secretstream_xchacha20poly1305_keygen(key);
        crypto_secretstream_xchacha20poly1305_init_push(&st, hdr, key);
        loop_write(ofd, hdr, sizeof(hdr));
        while (left > 0) {
                ssize_t n = loop_read(ifd, buf, ARCHIVE_CHUNK_SIZE);
                if (n <= 0)
                        die("raw: read", NULL);
                left -= (uint64_t) n;
                unsigned long long clen;
                crypto_secretstream_xchacha20poly1305_push(&st, ct + 4, &clen, buf, (size_t) n, NULL, 0,
                                                           left == 0 ? crypto_secretstream_xchacha20poly1305_TAG_FINAL : 0);
                memcpy(ct, &clen, 4);
                if (loop_write(ofd, ct, 4 + clen) < 0)
                        die("raw: write", NULL);
        }
        fsync(ofd);
        close(ifd);
        close(ofd);
        double t = now_s() - t0;
        unlink(out);
        free(buf);
        free(ct);
        return t;
}

static double seal_once(const char *in, const char *out, const SeatSecretKey *sk, const SeatBoxPublicKey *fac) {
        SeatError *e = NULL;
        ArchiveInput input = { .name = "disk.img", .role = "file", .path = in };
        ArchiveSealParams p = { .seat_id = "bench", .inputs = &input, .n_inputs = 1, .host_key = sk,
                                .facilitator = fac, .max_member_size = ARCHIVE_MEMBER_HARD_MAX };
        double t0 = now_s();
        if (archive_seal(out, &p, &e) < 0)
                die("archive_seal", e);
        double t = now_s() - t0;
        unlink(out);
        return t;
}

int main(void) {
        const char *dir = getenv("BENCH_DIR") ? getenv("BENCH_DIR") : "/var/tmp";
        unsigned mb = getenv("BENCH_EVIDENCE_MB") ? (unsigned) atoi(getenv("BENCH_EVIDENCE_MB")) : 256;
        double sync_v[RUNS], nosync_v[RUNS], raw_v[RUNS], seal_v[RUNS];
        char in[512], out[512];

        if (signing_init() < 0 || mb == 0)
                return 1;
        printf("bench-evidence: dir %s, %u MiB, median of %d runs\n", dir, mb, RUNS);
        for (int i = 0; i < RUNS; i++) {
                sync_v[i] = appends_per_s(dir, 0, 300);
                nosync_v[i] = appends_per_s(dir, AUDIT_LOG_NO_SYNC, 20000);
        }
        double app_sync = median(sync_v, RUNS), app_nosync = median(nosync_v, RUNS);
        printf("audit appends/s with fdatasync per record: %.0f\n", app_sync);
        printf("audit appends/s without fdatasync:         %.0f\n", app_nosync);

        snprintf(in, sizeof(in), "%s/bench-evidence-in-%d", dir, (int) getpid());
        snprintf(out, sizeof(out), "%s/bench-evidence-out-%d", dir, (int) getpid());
        int fd = open(in, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        uint8_t *mib = malloc(1 << 20);
        if (fd < 0 || !mib)
                return 1;
        for (unsigned i = 0; i < mb; i++) {
                randombytes_buf(mib, 1 << 20);
                if (loop_write(fd, mib, 1 << 20) < 0)
                        return 1;
        }
        close(fd);
        free(mib);

        SeatSecretKey *sk = NULL;
        SeatBoxSecretKey *fsk = NULL;
        SeatBoxPublicKey fpk;
        if (seat_secret_key_generate(&sk) < 0 || seat_box_key_generate(&fsk) < 0)
                return 1;
        seat_box_key_public(fsk, &fpk);
        (void) raw_secretstream(in, out); /* warm the page cache */
        for (int i = 0; i < RUNS; i++) {
                raw_v[i] = raw_secretstream(in, out);
                seal_v[i] = seal_once(in, out, sk, &fpk);
        }
        unlink(in);
        double raw = median(raw_v, RUNS), seal = median(seal_v, RUNS);
        printf("raw secretstream (read+encrypt+write+fsync): %.0f MiB/s\n", mb / raw);
        printf("archive_seal (hash+tar+encrypt+hash+write+fsync): %.0f MiB/s\n", mb / seal);
        printf("evidence: appends_per_s=%.0f seal_ratio=%.2f appends_nosync_per_s=%.0f\n", app_sync, raw / seal,
               app_nosync);
        seat_secret_key_free(sk);
        seat_box_secret_key_free(fsk);
        return 0;
}
