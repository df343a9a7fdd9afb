/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "appliance-kernel.h"
#include "common/fileio.h"
#include "common/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

void appliance_kernel_done(ApplianceKernel *k) {
        free(k->version);
        free(k->modules);
        free(k->vmlinux);
        free(k->cache_dir);
        *k = (ApplianceKernel) {};
}

static bool is_dir(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int appliance_kernel_pick(const char *boot_dir, const char *modules_dir, char **ret_version) {
        _cleanup_(closedirp) DIR *d = opendir(boot_dir);
        if (!d)
                return -errno;
        _cleanup_free_ char *best = NULL;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                const char *v = de->d_name;
                if (strncmp(v, "vmlinuz-", 8) != 0 || !v[8] || strchr(v + 8, '/'))
                        continue;
                v += 8;
                char mod[PATH_MAX];
                if (snprintf(mod, sizeof(mod), "%s/%s", modules_dir, v) >= (int) sizeof(mod) || !is_dir(mod))
                        continue;
                if (best && strverscmp(v, best) <= 0)
                        continue;
                char *copy = strdup(v);
                if (!copy)
                        return -ENOMEM;
                free(best);
                best = copy;
        }
        if (errno)
                return -errno;
        if (!best)
                return -ENOENT;
        *ret_version = TAKE_PTR(best);
        return 0;
}

/* One XZ stream from in[0..len) decompressed into a buffer of at most max bytes. */
static int xz_decode(const uint8_t *in, size_t len, size_t max, uint8_t **ret, size_t *ret_len) {
        lzma_stream z = LZMA_STREAM_INIT;
        /* 256 MiB of dictionary and state at most: a kernel's XZ uses 32 MiB */
        if (lzma_stream_decoder(&z, (uint64_t) 256 << 20, 0) != LZMA_OK)
                return -ENOMEM;
        size_t cap = (size_t) 64 << 20, n = 0;
        _cleanup_free_ uint8_t *out = malloc(cap);
        int r = out ? 0 : -ENOMEM;
        z.next_in = in;
        z.avail_in = len;
        while (r == 0) {
                if (n == cap) {
                        if (cap >= max) {
                                r = -EFBIG;
                                break;
                        }
                        size_t ncap = cap * 2 > max ? max : cap * 2;
                        uint8_t *p = realloc(out, ncap);
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        out = p;
                        cap = ncap;
                }
                z.next_out = out + n;
                z.avail_out = cap - n;
                /* LZMA_FINISH: the input is all there is; the stream's end stops the
                 * decoder, whatever follows it in the bzImage */
                lzma_ret lr = lzma_code(&z, LZMA_FINISH);
                n = cap - z.avail_out;
                if (lr == LZMA_STREAM_END)
                        break;
                if (lr != LZMA_OK)
                        r = lr == LZMA_MEM_ERROR ? -ENOMEM : -EBADMSG;
        }
        lzma_end(&z);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(out);
        *ret_len = n;
        return 0;
}

int appliance_kernel_extract(const char *bzimage, const char *dest) {
        _cleanup_free_ char *img = NULL;
        size_t len = 0;
        int r = read_file_capped(bzimage, APPLIANCE_BZIMAGE_MAX, &img, &len);
        if (r < 0)
                return r;
        /* Like linux/scripts/extract-vmlinux: the payload's offset is not trusted from the
         * setup header; every XZ stream start is tried until one gives an ELF file. */
        static const uint8_t magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };
        const uint8_t *p = (const uint8_t *) img, *end = p + len;
        int last = -ENOEXEC;
        while ((size_t) (end - p) >= sizeof(magic)) {
                const uint8_t *m = memmem(p, (size_t) (end - p), magic, sizeof(magic));
                if (!m)
                        break;
                _cleanup_free_ uint8_t *out = NULL;
                size_t n = 0;
                r = xz_decode(m, (size_t) (end - m), APPLIANCE_VMLINUX_MAX, &out, &n);
                if (r == 0 && n >= 4 && memcmp(out, "\x7f" "ELF", 4) == 0)
                        return write_file_atomic(dest, out, n, 0644);
                if (r == -ENOMEM || r == -EFBIG)
                        last = r;
                p = m + 1;
        }
        return last;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* The other vmlinux-* directories in cache: appliances of kernels no longer picked. */
static void remove_old(const char *cache, const char *keep) {
        _cleanup_(closedirp) DIR *d = opendir(cache);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strncmp(de->d_name, "vmlinux-", 8) != 0 || strcmp(de->d_name, keep) == 0)
                        continue;
                char path[PATH_MAX];
                if (snprintf(path, sizeof(path), "%s/%s", cache, de->d_name) < (int) sizeof(path))
                        (void) nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
        }
}

int appliance_kernel_prepare(const char *boot_dir, const char *modules_dir, const char *cache, ApplianceKernel *ret) {
        _cleanup_(appliance_kernel_done) ApplianceKernel k = {};
        int r = appliance_kernel_pick(boot_dir, modules_dir, &k.version);
        if (r < 0)
                return r;
        _cleanup_free_ char *name = NULL, *bzimage = NULL;
        if (asprintf(&name, "vmlinux-%s", k.version) < 0 || asprintf(&k.cache_dir, "%s/%s", cache, name) < 0 ||
            asprintf(&k.vmlinux, "%s/vmlinux", k.cache_dir) < 0 || asprintf(&k.modules, "%s/%s", modules_dir, k.version) < 0 ||
            asprintf(&bzimage, "%s/vmlinuz-%s", boot_dir, k.version) < 0)
                return -ENOMEM;
        /* 0700: libguestfs wants its cache owned by its user and closed to others */
        if (mkdir(cache, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(k.cache_dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        struct stat st;
        if (lstat(k.vmlinux, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 4) {
                remove_old(cache, name);
                r = appliance_kernel_extract(bzimage, k.vmlinux);
                if (r < 0)
                        return r;
        }
        *ret = k;
        k = (ApplianceKernel) {};
        return 0;
}
