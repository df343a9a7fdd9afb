/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* images/appliance-kernel.c: the kernel supermin would pick, and its XZ payload taken out of
 * a bzImage-shaped file (setup code, the stream, trailing data; a false magic before it). */
#include <fcntl.h>
#include <lzma.h>
#include <setjmp.h>
#include <stdbool.h>
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
#include "images/appliance-kernel.h"

static char dir[] = "/tmp/seatd-test-appliance-kernel-XXXXXX";

static char *path_of(const char *rel) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", dir, rel) > 0);
        return p;
}

static void put(const char *rel, const void *data, size_t len) {
        _cleanup_free_ char *p = path_of(rel);
        assert_int_equal(write_file_atomic(p, data, len, 0644), 0);
}

static void make_dir(const char *rel) {
        _cleanup_free_ char *p = path_of(rel);
        assert_int_equal(mkdir(p, 0755), 0);
}

/* An ELF-looking payload of n bytes (a pattern, so that XZ has something to do). */
static uint8_t *payload(size_t n, bool elf) {
        uint8_t *b = malloc(n);
        assert_non_null(b);
        for (size_t i = 0; i < n; i++)
                b[i] = (uint8_t) (i * 31 + i / 7);
        memcpy(b, elf ? "\x7f" "ELF" : "MZxx", 4);
        return b;
}

static size_t xz(const uint8_t *in, size_t n, uint8_t *out, size_t cap) {
        size_t pos = 0;
        assert_int_equal(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, NULL, in, n, out, &pos, cap), LZMA_OK);
        return pos;
}

/* setup bytes, a false magic, [the XZ of a non-ELF], the XZ of the payload, trailing bytes */
static size_t bzimage(const uint8_t *elf, size_t n, bool decoy, uint8_t *out, size_t cap) {
        static const uint8_t setup[] = "MZ\x00\x00 setup code\xfd" "7zXZ\x00 not a stream";
        size_t len = sizeof(setup);
        memcpy(out, setup, len);
        if (decoy) {
                _cleanup_free_ uint8_t *other = payload(4096, false);
                len += xz(other, 4096, out + len, cap - len);
        }
        len += xz(elf, n, out + len, cap - len);
        memcpy(out + len, "trailing data after the stream", 30);
        return len + 30;
}

static void extracts(bool decoy) {
        const size_t n = 300000, cap = 2 * n;
        _cleanup_free_ uint8_t *elf = payload(n, true), *img = malloc(cap);
        assert_non_null(img);
        size_t len = bzimage(elf, n, decoy, img, cap);
        put("vmlinuz-1", img, len);

        _cleanup_free_ char *src = path_of("vmlinuz-1"), *dest = path_of("vmlinux");
        assert_int_equal(appliance_kernel_extract(src, dest), 0);
        _cleanup_free_ char *got = NULL;
        size_t got_len = 0;
        assert_int_equal(read_file_capped(dest, n + 1, &got, &got_len), 0);
        assert_int_equal(got_len, n);
        assert_memory_equal(got, elf, n);
        unlink(dest);
}

TEST(extracts_the_elf_stream) {
        extracts(false);
}

/* A stream that decompresses to something that is not ELF is passed over, as
 * extract-vmlinux does. */
TEST(passes_over_a_stream_that_is_not_elf) {
        extracts(true);
}

TEST(refuses_a_file_with_no_elf_stream) {
        _cleanup_free_ uint8_t *other = payload(8192, false);
        uint8_t img[16384];
        size_t len = xz(other, 8192, img, sizeof(img));
        put("plain", img, len);
        put("empty", "", 0);
        _cleanup_free_ char *a = path_of("plain"), *b = path_of("empty"), *dest = path_of("out");
        assert_int_equal(appliance_kernel_extract(a, dest), -ENOEXEC);
        assert_int_equal(appliance_kernel_extract(b, dest), -ENOEXEC);
        assert_int_equal(access(dest, F_OK), -1); /* nothing written */
}

/* The newest version that has its modules, by version order (10 after 9). */
TEST(picks_the_newest_kernel_with_modules) {
        make_dir("boot");
        make_dir("modules");
        const char *const kernels[] = { "6.1.0-9-amd64", "6.1.0-10-amd64", "6.1.0-11-amd64" };
        for (size_t i = 0; i < 3; i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "boot/vmlinuz-%s", kernels[i]);
                put(rel, "x", 1);
        }
        /* 11 has no modules: supermin could not use it either */
        make_dir("modules/6.1.0-9-amd64");
        make_dir("modules/6.1.0-10-amd64");
        put("boot/config-6.1.0-12-amd64", "x", 1);
        _cleanup_free_ char *boot = path_of("boot"), *mods = path_of("modules"), *v = NULL;
        assert_int_equal(appliance_kernel_pick(boot, mods, &v), 0);
        assert_string_equal(v, "6.1.0-10-amd64");

        _cleanup_free_ char *empty = path_of("modules/6.1.0-9-amd64"), *none = NULL;
        assert_int_equal(appliance_kernel_pick(empty, mods, &none), -ENOENT);
}

/* prepare: extracts once into CACHE/vmlinux-V, keeps it, and removes an older kernel's
 * directory. */
TEST(prepares_once_and_removes_old_kernels) {
        make_dir("b2");
        make_dir("m2");
        make_dir("m2/5.10.0-1-amd64");
        const size_t n = 100000;
        _cleanup_free_ uint8_t *elf = payload(n, true), *img = malloc(2 * n);
        assert_non_null(img);
        put("b2/vmlinuz-5.10.0-1-amd64", img, bzimage(elf, n, false, img, 2 * n));
        make_dir("cache");
        make_dir("cache/vmlinux-4.19.0-1-amd64");
        put("cache/vmlinux-4.19.0-1-amd64/vmlinux", "old", 3);
        make_dir("cache/appliance.d");

        _cleanup_free_ char *b = path_of("b2"), *m = path_of("m2"), *c = path_of("cache");
        ApplianceKernel k = {};
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_string_equal(k.version, "5.10.0-1-amd64");
        _cleanup_free_ char *want_dir = path_of("cache/vmlinux-5.10.0-1-amd64"), *want_mods = path_of("m2/5.10.0-1-amd64");
        assert_string_equal(k.cache_dir, want_dir);
        assert_string_equal(k.modules, want_mods);
        struct stat st;
        assert_int_equal(stat(k.vmlinux, &st), 0);
        assert_int_equal(st.st_size, n);
        _cleanup_free_ char *old = path_of("cache/vmlinux-4.19.0-1-amd64"), *other = path_of("cache/appliance.d");
        assert_int_equal(access(old, F_OK), -1);
        assert_int_equal(access(other, F_OK), 0); /* only vmlinux-* directories are ours */

        /* the second time the extracted file is used as it is */
        put("cache/vmlinux-5.10.0-1-amd64/vmlinux", "\x7f" "ELF kept", 8);
        appliance_kernel_done(&k);
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_int_equal(stat(k.vmlinux, &st), 0);
        assert_int_equal(st.st_size, 8);
        appliance_kernel_done(&k);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        return system(cmd) == 0 ? 0 : -1;
}

TEST_MAIN_FIXTURE("appliance-kernel", setup, teardown)
