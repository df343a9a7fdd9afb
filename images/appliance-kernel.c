/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "appliance-kernel.h"
#include "common/fileio.h"
#include "common/macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

static bool is_regular(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* "-amd64"/"-x86_64" at the end: supermin tries those names first. */
static bool arch_named(const char *v) {
        size_t n = strlen(v);
        return (n > 6 && strcmp(v + n - 6, "-amd64") == 0) || (n > 7 && strcmp(v + n - 7, "-x86_64") == 0);
}

int appliance_kernel_pick(const char *boot_dir, const char *modules_dir, char **ret_version) {
        _cleanup_(closedirp) DIR *d = opendir(boot_dir);
        if (!d)
                return -errno;
        _cleanup_free_ char *best = NULL;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                const char *v = de->d_name;
                /* supermin's filters: no Xen kernels, a regular file, modules.dep there */
                if (strncmp(v, "vmlinuz-", 8) != 0 || !v[8] || strstr(v, "xen"))
                        continue;
                char path[PATH_MAX];
                if (snprintf(path, sizeof(path), "%s/%s", boot_dir, v) >= (int) sizeof(path) || !is_regular(path))
                        continue;
                v += 8;
                if (snprintf(path, sizeof(path), "%s/%s/modules.dep", modules_dir, v) >= (int) sizeof(path) ||
                    !is_regular(path))
                        continue;
                /* an arch-named kernel before any other, then the newest */
                if (best && (arch_named(best) != arch_named(v) ? arch_named(best) : strverscmp(v, best) <= 0))
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

/* A kernel QEMU can boot as an ELF file: 64-bit little-endian x86-64, with the PVH entry
 * note (Xen's XEN_ELFNOTE_PHYS32_ENTRY, CONFIG_PVH) in a PT_NOTE segment. Without that note
 * QEMU refuses the file, and every seal would fail as if the guest had broken the appliance. */
#define ELF_NOTE_PHYS32_ENTRY 18
bool appliance_kernel_bootable(const uint8_t *elf, size_t len) {
        Elf64_Ehdr h;
        if (len < sizeof(h))
                return false;
        memcpy(&h, elf, sizeof(h));
        if (memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 || h.e_ident[EI_CLASS] != ELFCLASS64 ||
            h.e_ident[EI_DATA] != ELFDATA2LSB || h.e_machine != EM_X86_64 || h.e_phentsize != sizeof(Elf64_Phdr) ||
            h.e_phoff > len || h.e_phnum > (len - h.e_phoff) / sizeof(Elf64_Phdr))
                return false;
        for (size_t i = 0; i < h.e_phnum; i++) {
                Elf64_Phdr ph;
                memcpy(&ph, elf + h.e_phoff + i * sizeof(ph), sizeof(ph));
                if (ph.p_type != PT_NOTE || ph.p_offset > len || ph.p_filesz > len - ph.p_offset)
                        continue;
                const uint8_t *p = elf + ph.p_offset, *end = p + ph.p_filesz;
                while ((size_t) (end - p) >= sizeof(Elf64_Nhdr)) {
                        Elf64_Nhdr nh;
                        memcpy(&nh, p, sizeof(nh));
                        size_t name = ((size_t) nh.n_namesz + 3) & ~(size_t) 3, desc = ((size_t) nh.n_descsz + 3) & ~(size_t) 3;
                        p += sizeof(nh);
                        if (name > (size_t) (end - p) || desc > (size_t) (end - p) - name)
                                break;
                        if (nh.n_type == ELF_NOTE_PHYS32_ENTRY && nh.n_namesz == 4 && memcmp(p, "Xen", 4) == 0)
                                return true;
                        p += name + desc;
                }
        }
        return false;
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
                if (r == 0 && appliance_kernel_bootable(out, n))
                        return write_file_atomic(dest, out, n, 0644);
                if (r == -ENOMEM || r == -EFBIG)
                        last = r;
                p = m + 1;
        }
        return last;
}

/* Under the exclusive lock: the other vmlinux-* directories in cache (appliances of kernels
 * no longer picked, or of a bzImage since replaced), and what a helper killed while it
 * extracted left in keep (write_file_atomic's hidden temporary files). */
static void remove_old(const char *cache, const char *keep) {
        _cleanup_(closedirp) DIR *d = opendir(cache);
        if (!d)
                return;
        struct dirent *de;
        char path[PATH_MAX];
        while ((de = readdir(d))) {
                if (strncmp(de->d_name, "vmlinux-", 8) != 0 || strcmp(de->d_name, keep) == 0)
                        continue;
                /* vmlinux-V/.guestfs-UID/appliance.d/FILE: three levels */
                (void) remove_tree_at(dirfd(d), de->d_name, 3);
        }
        if (snprintf(path, sizeof(path), "%s/%s", cache, keep) >= (int) sizeof(path))
                return;
        _cleanup_(closedirp) DIR *k = opendir(path);
        while (k && (de = readdir(k)))
                if (strncmp(de->d_name, ".vmlinux.", 9) == 0)
                        (void) unlinkat(dirfd(k), de->d_name, 0);
}

void appliance_kernel_done(ApplianceKernel *k) {
        FREE_MANY(k->version, k->modules, k->vmlinux, k->cache_dir);
        if (k->lock_fd >= 0)
                (void) close(k->lock_fd);
        *k = (ApplianceKernel) { .lock_fd = -1 };
}

int appliance_kernel_prepare(const char *boot_dir, const char *modules_dir, const char *cache, ApplianceKernel *ret) {
        _cleanup_(appliance_kernel_done) ApplianceKernel k = { .lock_fd = -1 };
        int r = appliance_kernel_pick(boot_dir, modules_dir, &k.version);
        if (r < 0)
                return r;
        _cleanup_free_ char *bzimage = NULL, *name = NULL, *lock = NULL;
        if (asprintf(&bzimage, "%s/vmlinuz-%s", boot_dir, k.version) < 0)
                return -ENOMEM;
        struct stat bz;
        if (stat(bzimage, &bz) < 0)
                return -errno;
        /* The directory is named after the bzImage's version, size and time: a kernel
         * replaced under the same version (a rebuilt package) is extracted again, with an
         * appliance of its own, and never boots as the old one. */
        if (asprintf(&name, "vmlinux-%s-%jd-%jd.%09ld", k.version, (intmax_t) bz.st_size, (intmax_t) bz.st_mtim.tv_sec,
                     bz.st_mtim.tv_nsec) < 0 ||
            asprintf(&k.cache_dir, "%s/%s", cache, name) < 0 || asprintf(&k.vmlinux, "%s/vmlinux", k.cache_dir) < 0 ||
            asprintf(&k.modules, "%s/%s", modules_dir, k.version) < 0 || asprintf(&lock, "%s/vmlinux.lock", cache) < 0)
                return -ENOMEM;
        /* 0700: libguestfs wants its cache owned by its user and closed to others */
        if (mkdir(cache, 0700) < 0 && errno != EEXIST)
                return -errno;
        /* Helpers of seals that run at once share the cache: each holds the lock shared for
         * as long as it uses its kernel's directory (until appliance_kernel_done()); old
         * directories go only under the exclusive lock, so never from under an appliance
         * that boots from one. When it is busy they wait for a later seal. */
        k.lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (k.lock_fd < 0)
                return -errno;
        bool exclusive = flock(k.lock_fd, LOCK_EX | LOCK_NB) == 0;
        if (!exclusive && flock(k.lock_fd, LOCK_SH) < 0)
                return -errno;
        if (mkdir(k.cache_dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (exclusive)
                remove_old(cache, name);
        struct stat st;
        /* two helpers may both extract: each writes a file of its own and renames it */
        if (lstat(k.vmlinux, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t) sizeof(Elf64_Ehdr)) {
                r = appliance_kernel_extract(bzimage, k.vmlinux);
                if (r < 0)
                        return r;
        }
        if (exclusive && flock(k.lock_fd, LOCK_SH) < 0)
                return -errno;
        *ret = k;
        k = (ApplianceKernel) { .lock_fd = -1 };
        return 0;
}
