/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* network/capture-ring.c: pcapng blocks as the format says, the cap held, the head kept,
 * every cut and every rotated packet counted, a restarted ring numbering after the last. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/seat-test.h"

#include "common/macro.h"
#include "network/capture-ring.h"

static char tmpdir[] = "/tmp/test-capture-ring-XXXXXX";
static int dir_fd = -1;

static int setup(void **state) {
        assert_non_null(mkdtemp(tmpdir));
        dir_fd = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dir_fd < 0;
}

static void clear_dir(void) {
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_name[0] != '.')
                        (void) unlinkat(dir_fd, de->d_name, 0);
        if (d)
                closedir(d);
}

static int teardown(void **state) {
        clear_dir();
        close(dir_fd);
        return rmdir(tmpdir);
}

static uint8_t *read_all(const char *name, size_t *ret_len) {
        int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC);
        struct stat st;
        assert_true(fd >= 0 && fstat(fd, &st) == 0);
        uint8_t *b = malloc((size_t) st.st_size + 1);
        assert_non_null(b);
        assert_int_equal(read(fd, b, (size_t) st.st_size), st.st_size);
        close(fd);
        *ret_len = (size_t) st.st_size;
        return b;
}

static uint32_t get32(const uint8_t *p) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
}

/* Walk a file's blocks: SHB, IDB, then EPBs whose lengths agree at both ends. Returns the
 * number of packets, their captured and original bytes. */
static uint32_t walk_snaplen = 96;

static unsigned walk(const char *name, uint64_t *ret_cap, uint64_t *ret_orig) {
        size_t len;
        uint8_t *b = read_all(name, &len);
        unsigned packets = 0;
        *ret_cap = *ret_orig = 0;
        assert_true(len >= 28);
        assert_int_equal(get32(b), 0x0A0D0D0A);
        assert_int_equal(get32(b + 8), 0x1A2B3C4D);
        size_t off = 0;
        for (unsigned i = 0; off < len; i++) {
                assert_true(off + 12 <= len);
                uint32_t type = get32(b + off), blen = get32(b + off + 4);
                assert_true(blen % 4 == 0 && blen >= 12 && off + blen <= len);
                assert_int_equal(get32(b + off + blen - 4), blen);
                if (i == 1) {
                        assert_int_equal(type, 1);
                        assert_int_equal(b[off + 8], 1); /* LINKTYPE_ETHERNET */
                        assert_int_equal(get32(b + off + 12), walk_snaplen);
                        assert_memory_equal(b + off + 20, "seatbr9", 7);
                }
                if (i >= 2) {
                        assert_int_equal(type, 6);
                        uint32_t cap = get32(b + off + 20), orig = get32(b + off + 24);
                        assert_true(cap <= walk_snaplen && cap <= orig);
                        assert_int_equal(blen, 32 + ((cap + 3) & ~3u));
                        assert_int_equal(b[off + 28], (uint8_t) (cap & 0xff)); /* our fill byte */
                        *ret_cap += cap;
                        *ret_orig += orig;
                        packets++;
                }
                off += blen;
        }
        free(b);
        return packets;
}

TEST(one_file) {
        CaptureRing *r = NULL;
        uint8_t pkt[200];
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 96, 1 << 20, &r), 0);
        for (uint32_t n = 60; n < 160; n += 10) {
                memset(pkt, (int) (MIN(n, 96u) & 0xff), sizeof(pkt));
                capture_ring_write(r, 1700000000000000ULL + n, pkt, n, n);
        }
        CaptureStats st;
        capture_ring_stats(r, &st);
        capture_ring_close(r);
        assert_int_equal(st.packets, 10);
        assert_int_equal(st.files, 1);
        assert_int_equal(st.files_rotated, 0);
        /* 60..150: those over 96 are cut: 100..150, 6 packets, (4+14+24+34+44+54) bytes */
        assert_int_equal(st.packets_cut, 6);
        assert_int_equal(st.bytes_cut, 4 + 14 + 24 + 34 + 44 + 54);
        uint64_t cap, orig;
        assert_int_equal(walk("cap-0001.pcapng", &cap, &orig), 10);
        assert_int_equal(orig, st.bytes_on_wire);
        assert_int_equal(orig - cap, st.bytes_cut);
        struct stat sb;
        assert_int_equal(fstatat(dir_fd, "cap-0001.pcapng", &sb, 0), 0);
        assert_int_equal((uint64_t) sb.st_size, st.bytes);
        clear_dir();
}

static uint64_t dir_bytes(unsigned *ret_files, unsigned *ret_lowest) {
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        uint64_t total = 0;
        *ret_files = 0;
        *ret_lowest = 0;
        while ((de = readdir(d))) {
                struct stat sb;
                unsigned n = capture_ring_file_number("cap-", de->d_name);
                if (!n)
                        continue;
                assert_int_equal(fstatat(dir_fd, de->d_name, &sb, 0), 0);
                total += (uint64_t) sb.st_size;
                (*ret_files)++;
                if (!*ret_lowest || n < *ret_lowest)
                        *ret_lowest = n;
        }
        closedir(d);
        return total;
}

/* A flood: 10 times the cap. The files stay under it, the first one stays, and what went
 * is exactly what the counters say. */
TEST(flood_rotates_under_cap) {
        const uint64_t cap = 1 << 20;
        CaptureRing *r = NULL;
        uint8_t pkt[96];
        memset(pkt, 96, sizeof(pkt));
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 96, cap, &r), 0);
        uint64_t written = 0;
        for (unsigned i = 0; written < 10 * cap; i++) {
                capture_ring_write(r, i, pkt, 96, 1500);
                written += 128;
                if (i % 1000 == 0) {
                        unsigned files, lowest;
                        assert_int_equal(capture_ring_flush(r), 0);
                        assert_true(dir_bytes(&files, &lowest) <= cap);
                }
        }
        CaptureStats st;
        capture_ring_stats(r, &st);
        capture_ring_close(r);
        unsigned files, lowest;
        uint64_t on_disk = dir_bytes(&files, &lowest);
        assert_true(on_disk <= cap);
        assert_int_equal(on_disk, st.bytes);
        assert_int_equal(files, st.files);
        assert_true(files <= CAPTURE_RING_FILES);
        assert_int_equal(lowest, 1); /* the head */
        assert_true(st.files_rotated > 0);
        assert_int_equal(st.files + st.files_rotated, files + st.files_rotated);
        /* every packet is in a file or counted as rotated away */
        uint64_t kept = 0;
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        while ((de = readdir(d)))
                if (capture_ring_file_number("cap-", de->d_name)) {
                        uint64_t c, o;
                        kept += walk(de->d_name, &c, &o);
                }
        closedir(d);
        assert_int_equal(kept + st.packets_rotated, st.packets);
        assert_int_equal(st.packets_cut, st.packets);
        assert_int_equal(st.bytes_cut, st.packets * (1500 - 96));
        assert_int_equal(st.packets_unwritten, 0);
        clear_dir();
}

/* Large packets (written straight from the caller's buffer) between small ones (gathered):
 * the blocks stay in order and whole. */
TEST(big_and_small) {
        CaptureRing *r = NULL;
        static uint8_t pkt[65536];
        uint64_t want_cap = 0;
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 65535, 4 << 20, &r), 0);
        for (unsigned i = 0; i < 40; i++) {
                uint32_t n = i % 3 == 0 ? 60000 + i : i % 3 == 1 ? 61 + i : 17000 + i;
                memset(pkt, (int) (n & 0xff), n);
                capture_ring_write(r, i, pkt, n, n);
                want_cap += n;
        }
        CaptureStats st;
        capture_ring_stats(r, &st);
        capture_ring_close(r);
        assert_int_equal(st.files_rotated, 0);
        assert_int_equal(st.packets_unwritten, 0);
        walk_snaplen = 65535;
        uint64_t cap = 0, orig = 0, total = 0;
        unsigned packets = 0;
        DIR *d = opendir(tmpdir);
        struct dirent *de;
        while ((de = readdir(d)))
                if (capture_ring_file_number("cap-", de->d_name)) {
                        packets += walk(de->d_name, &cap, &orig);
                        total += cap;
                }
        closedir(d);
        walk_snaplen = 96;
        assert_int_equal(packets, 40);
        assert_int_equal(total, want_cap);
        clear_dir();
}

/* A seatd restarted mid-session: the ring counts what is there and numbers after it. */
TEST(restart_numbers_after) {
        CaptureRing *r = NULL;
        uint8_t pkt[64] = {};
        pkt[0] = 64;
        memset(pkt, 64, sizeof(pkt));
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 96, 1 << 20, &r), 0);
        capture_ring_write(r, 1, pkt, 64, 64);
        capture_ring_close(r);
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 96, 1 << 20, &r), 0);
        CaptureStats st;
        capture_ring_stats(r, &st);
        assert_int_equal(st.files, 1);
        capture_ring_write(r, 2, pkt, 64, 64);
        capture_ring_close(r);
        uint64_t c, o;
        assert_int_equal(walk("cap-0001.pcapng", &c, &o), 1);
        assert_int_equal(walk("cap-0002.pcapng", &c, &o), 1);
        clear_dir();
}

/* A write that fails only at the end (the disk full when the last buffer is flushed):
 * the ring says so (write_error), and the packets that were still buffered are counted as
 * unwritten, not as in the file (the manifest then says the capture is incomplete). The
 * file size limit stands in for a full disk: writes past it fail with EFBIG. */
TEST(failed_last_flush_is_counted) {
        CaptureRing *r = NULL;
        uint8_t pkt[64];
        struct rlimit old, lim;
        memset(pkt, 64, sizeof(pkt));
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "seatbr9", 1, 96, 1 << 20, &r), 0);
        for (unsigned i = 0; i < 100; i++) /* 96 bytes a block: all buffered (256 KiB) */
                capture_ring_write(r, i, pkt, 64, 64);
        CaptureStats st;
        capture_ring_stats(r, &st);
        assert_int_equal(st.write_error, 0);
        sighandler_t was = signal(SIGXFSZ, SIG_IGN);
        lim = (struct rlimit) { .rlim_cur = 1024, .rlim_max = old.rlim_max };
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
        capture_ring_finish(r);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
        signal(SIGXFSZ, was);
        capture_ring_stats(r, &st);
        assert_int_equal(st.write_error, EFBIG);
        assert_int_equal(st.packets, 100);
        assert_int_equal(st.packets_unwritten, 100);
        /* what reached the file before the limit (1024 bytes) is cut off again: no torn
         * block, and the bytes counted are the file's */
        struct stat fs;
        assert_int_equal(fstatat(dir_fd, "cap-0001.pcapng", &fs, 0), 0);
        assert_int_equal(fs.st_size, 0);
        assert_int_equal(st.bytes, 0);
        /* and a packet after the end is counted, not written */
        capture_ring_write(r, 200, pkt, 64, 64);
        capture_ring_stats(r, &st);
        capture_ring_close(r);
        assert_int_equal(st.packets, 101);
        assert_int_equal(st.packets_unwritten, 101);
        clear_dir();
}

TEST(names_and_args) {
        CaptureRing *r = NULL;
        assert_int_equal(capture_ring_file_number("cap-", "cap-0001.pcapng"), 1);
        assert_int_equal(capture_ring_file_number("cap-", "cap-12345.pcapng"), 12345);
        assert_int_equal(capture_ring_file_number("cap-", "cap-001.pcapng"), 0);
        assert_int_equal(capture_ring_file_number("cap-", "cap-0001.pcap"), 0);
        assert_int_equal(capture_ring_file_number("cap-", "cap-0001.pcapng.tmp"), 0);
        assert_int_equal(capture_ring_file_number("cap-", "other-0001.pcapng"), 0);
        assert_int_equal(capture_ring_new(dir_fd, "a/b", "br", 1, 96, 1 << 20, &r), -EINVAL);
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "br", 1, 0, 1 << 20, &r), -EINVAL);
        assert_int_equal(capture_ring_new(dir_fd, "cap-", "br", 1, 96, 1000, &r), -EINVAL);
        assert_int_equal(capture_ring_file_max(64ULL << 20), 8ULL << 20);
        assert_int_equal(capture_ring_file_max(1 << 20), 128 * 1024);
}

TEST_MAIN_FIXTURE("capture-ring", setup, teardown)
