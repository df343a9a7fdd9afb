/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "inspect.h"
#include "common/log.h"

#if HAVE_LIBGUESTFS
#include "guestfs-util.h"
#endif

/* ---- the protocol marker: a pure function of the binary's bytes ---- */

int image_inspect_find_protocol(const void *buf, size_t len, int64_t *ret) {
        static const char marker[] = IMAGE_AGENT_PROTOCOL_MARKER;
        const size_t mlen = sizeof(marker) - 1;
        const char *p = buf, *end = p + len;
        int64_t found = -1;

        while ((size_t) (end - p) > mlen) {
                const char *hit = memmem(p, (size_t) (end - p), marker, mlen);
                if (!hit)
                        break;
                const char *d = hit + mlen;
                int64_t v = 0;
                size_t digits = 0;
                for (; d < end && *d >= '0' && *d <= '9' && digits < 9; d++, digits++)
                        v = v * 10 + (*d - '0');
                if (digits == 0 || (d < end && *d >= '0' && *d <= '9'))
                        return -EPROTO;
                if (found >= 0 && v != found)
                        return -EPROTO;
                found = v;
                p = d;
        }
        if (found < 0)
                return -ENOENT;
        *ret = found;
        return 0;
}

#if HAVE_LIBGUESTFS

#define INSPECT_READ_PIECE (1024 * 1024)
#define INSPECT_MOUNTPOINT "/"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct guestfs_statns *, guestfs_free_statns)

/* What the messages call the disk: the manifest's first disk (the appliance's /dev/sda). */
static const char *first_disk_name(const ImageManifest *m) {
        for (size_t i = 0; i < m->n_files; i++)
                if (m->files[i].role == IMAGE_ROLE_DISK)
                        return m->files[i].name;
        return "?";
}

static int guestfs_error(guestfs_h *g, const ImageManifest *m, int fallback_errno, const char *what,
                         SeatError **ret_error) {
        _cleanup_free_ char *ctx = NULL;
        if (asprintf(&ctx, "inspect image '%s'", m->name) < 0)
                return -ENOMEM;
        return image_guestfs_error(g, ctx, fallback_errno, what, ret_error);
}

static int handle_new(const ImageManifest *m, const ImageInspectOptions *opts, guestfs_h **ret,
                      SeatError **ret_error) {
        _cleanup_free_ char *ctx = NULL;
        if (asprintf(&ctx, "inspect image '%s'", m->name) < 0)
                return -ENOMEM;
        return image_guestfs_new(ctx, opts, ret, ret_error);
}

static int add_blob_and_launch(guestfs_h *g, const char *blob_path, ImageFormat format, const ImageManifest *m,
                               const ImageInspectOptions *opts, SeatError **ret_error) {
        _cleanup_free_ char *ctx = NULL;
        if (asprintf(&ctx, "inspect image '%s'", m->name) < 0)
                return -ENOMEM;
        return image_guestfs_add_and_launch(g, ctx, blob_path, image_format_to_string(format), opts, ret_error);
}

static int check_filesystem(guestfs_h *g, const ImageManifest *m, SeatError **ret_error) {
        const char *fs = m->guest_init_filesystem, *disk = first_disk_name(m);
        _cleanup_strv_free_ char **devices = guestfs_list_devices(g);
        if (!devices)
                return guestfs_error(g, m, EIO, "list devices", ret_error);
        _cleanup_strv_free_ char **partitions = guestfs_list_partitions(g);
        if (!partitions)
                return guestfs_error(g, m, EIO, "list partitions", ret_error);
        if (!strv_contains(devices, fs) && !strv_contains(partitions, fs)) {
                size_t n = 0;
                while (partitions[n])
                        n++;
                return seat_error_set(ret_error, ENODEV,
                                      "image '%s': guest_init.filesystem '%s' is not on its first disk '%s', which inspection sees as /dev/sda with %zu partition(s): name /dev/sda or /dev/sdaN in the manifest",
                                      m->name, fs, disk, n);
        }

        _cleanup_free_ char *type = guestfs_vfs_type(g, fs);
        if (!type || !type[0])
                return seat_error_set(ret_error, ENODEV,
                                      "image '%s': '%s' on disk '%s' holds no filesystem: guest_init.filesystem must name the filesystem that holds guest-init (rebuild the disk or fix the manifest)",
                                      m->name, fs, disk);
        if (guestfs_mount_ro(g, fs, INSPECT_MOUNTPOINT) < 0) {
                _cleanup_error_ SeatError *inner = NULL;
                (void) guestfs_error(g, m, ENODEV, "mount", &inner);
                return seat_error_set(ret_error, ENODEV,
                                      "image '%s': the %s filesystem on '%s' (disk '%s') does not mount read-only: %s (repair or rebuild the disk)",
                                      m->name, type, fs, disk, inner ? inner->message : "?");
        }
        return 0;
}

/* Reads the whole of path (at most max bytes, size bytes expected) through the appliance. */
static int read_guest_file(guestfs_h *g, const char *path, size_t size, uint8_t **ret, const ImageManifest *m,
                           SeatError **ret_error) {
        _cleanup_free_ uint8_t *buf = malloc(size ? size : 1);
        size_t got = 0;
        if (!buf)
                return -ENOMEM;
        while (got < size) {
                size_t n = 0;
                int want = (int) MIN(size - got, (size_t) INSPECT_READ_PIECE);
                _cleanup_free_ char *piece = guestfs_pread(g, path, want, (int64_t) got, &n);
                if (!piece)
                        return guestfs_error(g, m, EIO, "read guest-init", ret_error);
                if (n == 0 || n > (size_t) want)
                        return seat_error_set(ret_error, EIO, "image '%s': '%s' changed size while it was read", m->name,
                                              path);
                memcpy(buf + got, piece, n);
                got += n;
        }
        *ret = TAKE_PTR(buf);
        return 0;
}

static bool is_elf_executable(const uint8_t *b, size_t len) {
        /* e_ident: magic, class 1|2, data 1 (LSB) or 2 (MSB); e_type at 16: ET_EXEC or ET_DYN. */
        if (len < 64 || memcmp(b, "\177ELF", 4) != 0 || (b[4] != 1 && b[4] != 2) || (b[5] != 1 && b[5] != 2))
                return false;
        unsigned type = b[5] == 1 ? (unsigned) b[16] | (unsigned) b[17] << 8 : (unsigned) b[17] | (unsigned) b[16] << 8;
        return type == 2 || type == 3;
}

static int check_guest_init(guestfs_h *g, const ImageManifest *m, SeatError **ret_error) {
        const char *path = m->guest_init_path, *fs = m->guest_init_filesystem;
        _cleanup_(guestfs_free_statnsp) struct guestfs_statns *st = guestfs_lstatns(g, path);
        if (!st) {
                if (guestfs_last_errno(g) == ENOENT || guestfs_last_errno(g) == ENOTDIR)
                        return seat_error_set(ret_error, ENOENT,
                                              "image '%s': guest-init '%s' is not on '%s': install it there or fix guest_init in the manifest",
                                              m->name, path, fs);
                return guestfs_error(g, m, EIO, "look up guest-init", ret_error);
        }
        if (!S_ISREG((mode_t) st->st_mode) || !(st->st_mode & 0111))
                return seat_error_set(ret_error, ENOEXEC,
                                      "image '%s': guest-init '%s' on '%s' is not an executable regular file (mode %06" PRIo64 "): install the binary itself there, not a link",
                                      m->name, path, fs, (uint64_t) st->st_mode);
        if (st->st_size < 64 || (uint64_t) st->st_size > IMAGE_INSPECT_GUEST_INIT_MAX)
                return seat_error_set(ret_error, st->st_size < 64 ? ENOEXEC : EFBIG,
                                      "image '%s': guest-init '%s' on '%s' has %" PRIi64 " bytes, not 64..%u: install seatd's guest-init there",
                                      m->name, path, fs, st->st_size, IMAGE_INSPECT_GUEST_INIT_MAX);

        _cleanup_free_ uint8_t *bin = NULL;
        size_t size = (size_t) st->st_size;
        int r = read_guest_file(g, path, size, &bin, m, ret_error);
        if (r < 0)
                return r;
        if (!is_elf_executable(bin, size))
                return seat_error_set(ret_error, ENOEXEC,
                                      "image '%s': guest-init '%s' on '%s' is not an ELF executable: install seatd's guest-init binary there",
                                      m->name, path, fs);
        int64_t proto = 0;
        r = image_inspect_find_protocol(bin, size, &proto);
        if (r == -ENOENT)
                return seat_error_set(ret_error, EPROTO,
                                      "image '%s': '%s' on '%s' carries no %s marker: it is not seatd's guest-init (install guest-init speaking protocol %" PRId64 ")",
                                      m->name, path, fs, IMAGE_AGENT_PROTOCOL_MARKER, m->agent_protocol);
        if (r < 0)
                return seat_error_set(ret_error, EPROTO, "image '%s': guest-init '%s' on '%s' carries conflicting %s markers",
                                      m->name, path, fs, IMAGE_AGENT_PROTOCOL_MARKER);
        if (proto != m->agent_protocol)
                return seat_error_set(ret_error, EPROTO,
                                      "image '%s': guest-init '%s' on '%s' speaks agent protocol %" PRId64 ", the manifest declares %" PRId64 ": rebuild the image with a matching guest-init or fix agent_protocol",
                                      m->name, path, fs, proto, m->agent_protocol);
        return 0;
}

int image_inspect(const char *blob_path, ImageFormat format, const ImageManifest *m, const ImageInspectOptions *opts,
                  SeatError **ret_error) {
        _cleanup_(guestfs_closep) guestfs_h *g = NULL;
        int r;

        if (!m->guest_init_filesystem || !m->guest_init_path)
                return 0; /* guest-init in the initramfs: covered by its digest */
        r = handle_new(m, opts, &g, ret_error);
        if (r >= 0)
                r = add_blob_and_launch(g, blob_path, format, m, opts, ret_error);
        if (r >= 0)
                r = check_filesystem(g, m, ret_error);
        if (r >= 0)
                r = check_guest_init(g, m, ret_error);
        if (g)
                (void) guestfs_shutdown(g); /* read-only: nothing to flush; stops the appliance now */
        return r;
}

#else /* !HAVE_LIBGUESTFS */

int image_inspect(const char *blob_path, ImageFormat format, const ImageManifest *m, const ImageInspectOptions *opts,
                  SeatError **ret_error) {
        if (!m->guest_init_filesystem || !m->guest_init_path)
                return 0;
        return seat_error_set(ret_error, EOPNOTSUPP,
                              "image '%s': seatd was built without libguestfs and cannot inspect its disk (install libguestfs-dev and rebuild, or set inspect_images = false in seatd.conf)",
                              m->name);
}

#endif
