/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The libguestfs appliance's kernel as an uncompressed vmlinux, for TCG hosts.
 *
 * supermin hands QEMU the host's bzImage (/boot/vmlinuz-V). Under TCG the kernel's own
 * decompressor then runs emulated, about 4-5 s of every appliance boot (a seal, an
 * inspection) on the 2-core test machines: 14 s against 9 s from `launch` to "appliance is
 * up" (guestfish run on an empty disk, -cpu qemu64 in both). Seat images boot a vmlinux
 * for the same reason (images/recipes/README.md). QEMU boots the ELF through its PVH note
 * (Debian's kernels are built with CONFIG_PVH).
 *
 * appliance_kernel_prepare() picks the kernel as supermin does (no Xen kernels; modules.dep
 * in /lib/modules/V; "-amd64" names first, then the newest), extracts its XZ payload once
 * into CACHE/vmlinux-V-SIZE-MTIME/vmlinux (named after the bzImage, so a replaced one is
 * extracted again), and returns that directory as the libguestfs cache to use with it:
 * supermin's --if-newer does not look at the kernel, so an appliance built from another
 * kernel must not be reused. The caller sets SUPERMIN_KERNEL, SUPERMIN_KERNEL_VERSION and
 * SUPERMIN_MODULES (single-threaded: seatd-collect) before the launch. Any failure (a kernel
 * that is not XZ-compressed, no space) leaves the caller on the bzImage, only slower.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most bytes read from a bzImage, and written as its vmlinux (Debian 12's: 7.8 MiB and
 * 63 MiB). */
#define APPLIANCE_BZIMAGE_MAX ((size_t) 128 << 20)
#define APPLIANCE_VMLINUX_MAX ((size_t) 512 << 20)

typedef struct ApplianceKernel {
        char *version;   /* "6.1.0-57-amd64" */
        char *modules;   /* /lib/modules/VERSION */
        char *vmlinux;   /* CACHE/vmlinux-VERSION/vmlinux */
        char *cache_dir; /* CACHE/vmlinux-VERSION-SIZE-MTIME: libguestfs' cache for this kernel */
        int lock_fd;     /* CACHE/vmlinux.lock, held shared until appliance_kernel_done() */
} ApplianceKernel;

void appliance_kernel_done(ApplianceKernel *k);

/* The newest VERSION (strverscmp) with BOOT/vmlinuz-VERSION and MODULES/VERSION. -ENOENT: none. */
int appliance_kernel_pick(const char *boot_dir, const char *modules_dir, char **ret_version);

/* An x86-64 ELF kernel with the PVH entry note, which QEMU boots directly. */
bool appliance_kernel_bootable(const uint8_t *elf, size_t len);

/* The first XZ stream in the bzImage at `bzimage` that decompresses to a bootable ELF
 * kernel, written to `dest` (atomically, 0644). -ENOEXEC: none; -EFBIG: over the caps above. */
int appliance_kernel_extract(const char *bzimage, const char *dest);

/* Pick (in boot_dir and modules_dir: /boot and /lib/modules) and extract into cache (made
 * if missing; other vmlinux-* directories in it are removed: an old kernel's appliance). */
int appliance_kernel_prepare(const char *boot_dir, const char *modules_dir, const char *cache, ApplianceKernel *ret);
