/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* images/appliance-kernel.c: the kernel supermin would pick, and its XZ payload taken out of
 * a bzImage-shaped file (setup code, the stream, trailing data; a false magic before it). */
#include <elf.h>
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
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "common/fileio.h"
#include "common/macro.h"
#include "images/appliance-kernel.h"
#include "unit-source.h"

/* mkdtemp()'s template: setup() replaces the Xs with the scratch directory's name */
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

/* A payload of n bytes (a pattern, so that XZ has something to do): with elf, it starts
 * as an x86-64 kernel QEMU boots (ELF64 header, one PT_NOTE with Xen's PHYS32_ENTRY note);
 * with pvh false, the note is another one. */
static uint8_t *payload_as(size_t n, bool elf, bool pvh) {
        uint8_t *b = malloc(n);
        assert_non_null(b);
        for (size_t i = 0; i < n; i++)
                b[i] = (uint8_t) (i * 31 + i / 7);
        if (!elf) {
                memcpy(b, "MZxx", 4);
                return b;
        }
        assert_true(n >= 256);
        Elf64_Ehdr h = { .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_phoff = 64,
                         .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1, .e_ehsize = sizeof(Elf64_Ehdr) };
        memcpy(h.e_ident, ELFMAG, SELFMAG);
        h.e_ident[EI_CLASS] = ELFCLASS64;
        h.e_ident[EI_DATA] = ELFDATA2LSB;
        h.e_ident[EI_VERSION] = EV_CURRENT;
        Elf64_Phdr ph = { .p_type = PT_NOTE, .p_offset = 128, .p_filesz = 2 * (sizeof(Elf64_Nhdr) + 8) };
        /* a GNU build-id note first, then Xen's */
        Elf64_Nhdr gnu = { .n_namesz = 4, .n_descsz = 4, .n_type = 3 }, xen = { .n_namesz = 4, .n_descsz = 4, .n_type = pvh ? 18 : 17 };
        memcpy(b, &h, sizeof(h));
        memcpy(b + 64, &ph, sizeof(ph));
        memcpy(b + 128, &gnu, sizeof(gnu));
        memcpy(b + 128 + sizeof(gnu), "GNU\0abcd", 8);
        memcpy(b + 128 + sizeof(gnu) + 8, &xen, sizeof(xen));
        memcpy(b + 128 + 2 * sizeof(gnu) + 8, "Xen\0\0\0\0\x01", 8);
        return b;
}

static uint8_t *payload(size_t n, bool elf) {
        return payload_as(n, elf, true);
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

TEST(refuses_a_file_with_no_bootable_stream) {
        _cleanup_free_ uint8_t *other = payload(8192, false), *nopvh = payload_as(8192, true, false);
        uint8_t img[16384];
        put("plain", img, xz(other, 8192, img, sizeof(img)));
        /* an x86-64 ELF file without the PVH note: QEMU could not boot it */
        put("no-pvh", img, xz(nopvh, 8192, img, sizeof(img)));
        put("empty", "", 0);
        _cleanup_free_ char *a = path_of("plain"), *b = path_of("empty"), *c = path_of("no-pvh"), *dest = path_of("out");
        assert_int_equal(appliance_kernel_extract(a, dest), -ENOEXEC);
        assert_int_equal(appliance_kernel_extract(b, dest), -ENOEXEC);
        assert_int_equal(appliance_kernel_extract(c, dest), -ENOEXEC);
        assert_int_equal(access(dest, F_OK), -1); /* nothing written */
}

/* The ELF check reads only inside the buffer whatever the header and notes claim. */
TEST(bootable_stays_inside_the_file) {
        _cleanup_free_ uint8_t *k = payload(512, true);
        assert_true(appliance_kernel_bootable(k, 512));
        assert_false(appliance_kernel_bootable(k, 63));      /* a cut header */
        assert_false(appliance_kernel_bootable(k, 150));     /* the notes cut off */
        Elf64_Ehdr *h = (Elf64_Ehdr *) k;
        h->e_phnum = 0xffff;                                 /* more headers than bytes */
        assert_false(appliance_kernel_bootable(k, 512));
        h->e_phnum = 1;
        Elf64_Nhdr *n = (Elf64_Nhdr *) (k + 128);
        n->n_namesz = 0xfffffff0;                            /* a note longer than its segment */
        assert_false(appliance_kernel_bootable(k, 512));
        n->n_namesz = 4;
        h->e_machine = EM_AARCH64;
        assert_false(appliance_kernel_bootable(k, 512));
}

/* As supermin picks: a regular vmlinuz with modules.dep beside its modules, no Xen kernel,
 * an "-amd64" name before any other, then the newest by version order (10 after 9). */
TEST(picks_the_kernel_supermin_would) {
        make_dir("boot");
        make_dir("modules");
        const char *const kernels[] = { "6.1.0-9-amd64", "6.1.0-10-amd64", "6.1.0-11-amd64", "6.9-custom", "6.2.0-1-xen-amd64" };
        for (size_t i = 0; i < ELEMENTSOF(kernels); i++) {
                char rel[64];
                snprintf(rel, sizeof(rel), "boot/vmlinuz-%s", kernels[i]);
                put(rel, "x", 1);
                snprintf(rel, sizeof(rel), "modules/%s", kernels[i]);
                make_dir(rel);
                /* 11 has a modules directory, but no modules.dep: supermin could not use it */
                if (strcmp(kernels[i], "6.1.0-11-amd64") != 0) {
                        snprintf(rel, sizeof(rel), "modules/%s/modules.dep", kernels[i]);
                        put(rel, "", 0);
                }
        }
        put("boot/config-6.1.0-12-amd64", "x", 1);
        _cleanup_free_ char *boot = path_of("boot"), *mods = path_of("modules"), *v = NULL;
        assert_int_equal(appliance_kernel_pick(boot, mods, &v), 0);
        assert_string_equal(v, "6.1.0-10-amd64");

        _cleanup_free_ char *empty = path_of("modules/6.1.0-9-amd64"), *none = NULL;
        assert_int_equal(appliance_kernel_pick(empty, mods, &none), -ENOENT);
}

/* BOOT/vmlinuz-VERSION (a bzImage of elf, n bytes; img: room for 2n), MODULES/VERSION with
 * its modules.dep, and CACHE holding an older kernel's directory. */
static void kernel_tree(const char *boot, const char *mods, const char *cache, const char *version, const uint8_t *elf,
                        size_t n, uint8_t *img) {
        char rel[128];
        make_dir(boot);
        make_dir(mods);
        snprintf(rel, sizeof(rel), "%s/%s", mods, version);
        make_dir(rel);
        snprintf(rel, sizeof(rel), "%s/%s/modules.dep", mods, version);
        put(rel, "", 0);
        snprintf(rel, sizeof(rel), "%s/vmlinuz-%s", boot, version);
        put(rel, img, bzimage(elf, n, false, img, 2 * n));
        make_dir(cache);
        snprintf(rel, sizeof(rel), "%s/vmlinux-4.19.0-1-amd64-1-1.000000000", cache);
        make_dir(rel);
}

/* prepare: extracts once into CACHE/vmlinux-V-SIZE-MTIME, keeps it, removes an older
 * kernel's directory, and extracts again when the bzImage is replaced under the same version. */
TEST(prepares_once_and_follows_the_bzimage) {
        const size_t n = 100000;
        _cleanup_free_ uint8_t *elf = payload(n, true), *img = malloc(2 * n);
        assert_non_null(img);
        kernel_tree("b2", "m2", "cache", "5.10.0-1-amd64", elf, n, img);
        put("cache/vmlinux-4.19.0-1-amd64-1-1.000000000/vmlinux", "old", 3);
        make_dir("cache/appliance.d");

        _cleanup_free_ char *b = path_of("b2"), *m = path_of("m2"), *c = path_of("cache");
        _cleanup_(appliance_kernel_done) ApplianceKernel k = { .lock_fd = -1 };
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_string_equal(k.version, "5.10.0-1-amd64");
        _cleanup_free_ char *want_mods = path_of("m2/5.10.0-1-amd64"), *prefix = path_of("cache/vmlinux-5.10.0-1-amd64-");
        assert_true(strncmp(k.cache_dir, prefix, strlen(prefix)) == 0);
        assert_string_equal(k.modules, want_mods);
        assert_true(k.lock_fd >= 0);
        struct stat st;
        assert_int_equal(stat(k.vmlinux, &st), 0);
        assert_int_equal(st.st_size, n);
        _cleanup_free_ char *old = path_of("cache/vmlinux-4.19.0-1-amd64-1-1.000000000"), *other = path_of("cache/appliance.d");
        assert_int_equal(access(old, F_OK), -1);
        assert_int_equal(access(other, F_OK), 0); /* only vmlinux-* directories are ours */

        /* the second time the extracted file is used as it is */
        _cleanup_free_ char *first = strdup(k.vmlinux), *first_dir = strdup(k.cache_dir);
        assert_non_null(first);
        uint8_t kept[128] = "\x7f" "ELF kept";
        assert_int_equal(write_file_atomic(first, kept, sizeof(kept), 0644), 0);
        appliance_kernel_done(&k);
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_string_equal(k.vmlinux, first);
        assert_int_equal(stat(k.vmlinux, &st), 0);
        assert_int_equal(st.st_size, sizeof(kept));
        appliance_kernel_done(&k);

        /* a new bzImage under the same version: a new directory, extracted again; the old one goes */
        put("b2/vmlinuz-5.10.0-1-amd64", img, bzimage(elf, n - 1000, false, img, 2 * n));
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_string_not_equal(k.cache_dir, first_dir);
        assert_int_equal(stat(k.vmlinux, &st), 0);
        assert_int_equal(st.st_size, n - 1000);
        assert_int_equal(access(first_dir, F_OK), -1);
}

/* While another helper uses its kernel (the lock held shared), old directories stay. */
TEST(keeps_old_kernels_while_one_is_in_use) {
        const size_t n = 50000;
        _cleanup_free_ uint8_t *elf = payload(n, true), *img = malloc(2 * n);
        assert_non_null(img);
        kernel_tree("b3", "m3", "cache3", "5.10.0-2-amd64", elf, n, img);
        _cleanup_free_ char *b = path_of("b3"), *m = path_of("m3"), *c = path_of("cache3"), *lock = path_of("cache3/vmlinux.lock"),
                            *old = path_of("cache3/vmlinux-4.19.0-1-amd64-1-1.000000000");
        int other = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(other >= 0);
        assert_int_equal(flock(other, LOCK_SH), 0);
        _cleanup_(appliance_kernel_done) ApplianceKernel k = { .lock_fd = -1 };
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_int_equal(access(k.vmlinux, F_OK), 0);
        assert_int_equal(access(old, F_OK), 0);
        close(other);
        appliance_kernel_done(&k);
        assert_int_equal(appliance_kernel_prepare(b, m, c, &k), 0);
        assert_int_equal(access(old, F_OK), -1);
}

static int setup(void **state) {
        return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
        return unit_remove_tree(dir);
}

TEST_MAIN_FIXTURE("appliance-kernel", setup, teardown)
