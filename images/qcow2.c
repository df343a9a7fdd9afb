/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/macro.h"
#include "qcow2.h"

#define QCOW2_MAGIC "QFI\xfb"
#define QCOW2_V2_HEADER 72u
#define QCOW2_V3_HEADER 104u
#define INCOMPAT_DIRTY (1ull << 0)
#define INCOMPAT_CORRUPT (1ull << 1)
#define INCOMPAT_DATA_FILE (1ull << 2)
#define INCOMPAT_KNOWN ((1ull << 5) - 1) /* dirty, corrupt, data file, compression, extended L2 */
#define EXT_END 0x00000000u
#define EXT_BACKING_FORMAT 0xe2792acau
#define EXT_DATA_FILE 0x44415441u

static uint32_t be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p) {
        return (uint64_t) be32(p) << 32 | be32(p + 4);
}

static int refuse(SeatError **ret_error, const char *name, const char *why) {
        return seat_error_set(ret_error, EMEDIUMTYPE, "disk '%s' refused: %s", name, why);
}

static int check_extensions(const uint8_t *head, size_t len, size_t off, const char *name, SeatError **ret_error) {
        for (unsigned n = 0; n < 1024; n++) {
                if (off + 8 > len)
                        return refuse(ret_error, name, "qcow2 header extensions run past the file's first MiB");
                uint32_t type = be32(head + off), size = be32(head + off + 4);
                if (type == EXT_END)
                        return 0;
                if (type == EXT_DATA_FILE)
                        return refuse(ret_error, name, "qcow2 image names an external data file");
                if (type == EXT_BACKING_FORMAT)
                        return refuse(ret_error, name, "qcow2 image names a backing file format");
                size_t padded = ((size_t) size + 7) & ~(size_t) 7;
                if (padded > len - off - 8)
                        return refuse(ret_error, name, "qcow2 header extension runs past the file's first MiB");
                off += 8 + padded;
        }
        return refuse(ret_error, name, "qcow2 image has too many header extensions");
}

static int check_qcow2(const uint8_t *head, size_t len, uint64_t file_size, const char *name, SeatError **ret_error) {
        if (len < QCOW2_V2_HEADER || memcmp(head, QCOW2_MAGIC, 4) != 0)
                return refuse(ret_error, name, "the manifest says qcow2 but it has no qcow2 header");
        uint32_t version = be32(head + 4);
        if (version != 2 && version != 3)
                return refuse(ret_error, name, "unsupported qcow2 version");
        if (be64(head + 8) != 0 || be32(head + 16) != 0)
                return refuse(ret_error, name, "qcow2 image has a backing file (base images must stand alone)");
        uint32_t cluster_bits = be32(head + 20);
        if (cluster_bits < 9 || cluster_bits > 21)
                return refuse(ret_error, name, "qcow2 cluster size out of range");
        if (be32(head + 32) != 0)
                return refuse(ret_error, name, "encrypted qcow2 images are not supported");
        if (be32(head + 60) != 0 && version == 2)
                return refuse(ret_error, name, "qcow2 v2 image with internal snapshots");

        size_t ext_off = QCOW2_V2_HEADER;
        if (version == 3) {
                if (len < QCOW2_V3_HEADER)
                        return refuse(ret_error, name, "truncated qcow2 v3 header");
                uint64_t incompat = be64(head + 72);
                uint32_t header_length = be32(head + 100);
                if (incompat & INCOMPAT_DATA_FILE)
                        return refuse(ret_error, name, "qcow2 image uses an external data file");
                if (incompat & (INCOMPAT_DIRTY | INCOMPAT_CORRUPT))
                        return refuse(ret_error, name, "qcow2 image is dirty or marked corrupt (run qemu-img check -r all)");
                if (incompat & ~INCOMPAT_KNOWN)
                        return refuse(ret_error, name, "qcow2 image has unknown incompatible features");
                if (header_length < QCOW2_V3_HEADER || header_length > len || header_length % 8)
                        return refuse(ret_error, name, "qcow2 header length out of range");
                ext_off = header_length;
        }
        if (file_size < ((uint64_t) 1 << cluster_bits))
                return refuse(ret_error, name, "qcow2 image smaller than one cluster");
        return check_extensions(head, len, ext_off, name, ret_error);
}

int image_format_check(ImageFormat format, const uint8_t *head, size_t len, uint64_t file_size,
                       const char *name, SeatError **ret_error) {
        if (format == IMAGE_FORMAT_QCOW2)
                return check_qcow2(head, len, file_size, name, ret_error);
        if (len >= 4 && memcmp(head, QCOW2_MAGIC, 4) == 0)
                return refuse(ret_error, name, "the manifest says raw but it starts with a qcow2 header");
        return 0;
}

int image_disk_virtual_size(ImageFormat format, const char *path, uint64_t *ret) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        uint8_t h[32];
        struct stat st;

        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (format != IMAGE_FORMAT_QCOW2) {
                *ret = (uint64_t) st.st_size;
                return 0;
        }
        ssize_t n = pread(fd, h, sizeof(h), 0);
        if (n != (ssize_t) sizeof(h) || memcmp(h, QCOW2_MAGIC, 4) != 0)
                return n < 0 ? -errno : -EMEDIUMTYPE;
        uint64_t v = 0;
        for (int i = 24; i < 32; i++)
                v = (v << 8) | h[i];
        *ret = v;
        return 0;
}
