/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* capture-ring.c: pcapng files under a size cap, head kept, the rest a ring (capture-ring.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "capture-ring.h"
#include "common/macro.h"

/* pcapng (draft-ietf-opsawg-pcapng): Section Header, Interface Description, Enhanced
 * Packet blocks, written in this machine's byte order (the byte-order magic says which). */
#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 0x00000001u
#define PCAPNG_EPB 0x00000006u
#define PCAPNG_BOM 0x1A2B3C4Du
#define PCAPNG_OPT_END 0
#define PCAPNG_IF_NAME 2
#define SHB_LEN 28u
#define EPB_FIXED 32u
/* Packets are gathered here and written in one go; a packet larger than BIG goes to the
 * file straight from the caller's buffer (writev) instead of being copied once more: the
 * capture of a bulk transfer is mostly 64 KiB GSO frames (tests/bench/bench-egress.sh). */
#define FILE_BUFFER (256u * 1024u)
#define BIG (16u * 1024u)

typedef struct RingFile {
        unsigned number;
        uint64_t bytes, packets;
} RingFile;

struct CaptureRing {
        int dir_fd;
        char prefix[CAPTURE_RING_PREFIX_MAX + 1];
        char ifname[CAPTURE_RING_IFNAME_MAX + 1];
        uint16_t linktype;
        uint32_t snaplen;
        uint64_t max_bytes, file_max;
        RingFile *files;          /* oldest first; the last is the one written when cur */
        size_t n_files, allocated;
        int cur;                  /* the file being written, or -1 */
        uint8_t *buf;             /* FILE_BUFFER bytes for it */
        size_t buf_len;
        uint64_t buf_packets;     /* packets whose blocks are in buf, counted in their file */
        bool finished;            /* capture_ring_finish() ran: closed and synced */
        CaptureStats st;
};

static uint32_t pad4(uint32_t n) {
        return (n + 3u) & ~3u;
}

static uint32_t idb_len(const CaptureRing *r) {
        return 20u + 4u + pad4((uint32_t) strlen(r->ifname)) + 4u;
}

static uint64_t header_len(const CaptureRing *r) {
        return SHB_LEN + idb_len(r);
}

uint32_t capture_ring_block_bytes(uint32_t caplen) {
        return EPB_FIXED + pad4(caplen);
}

uint64_t capture_ring_file_max(uint64_t max_bytes) {
        return MAX(max_bytes / CAPTURE_RING_FILES, (uint64_t) CAPTURE_RING_FILE_MIN);
}

/* Every file holds its headers and one packet of the largest snaplen. */
static uint64_t file_max_for(const CaptureRing *r) {
        return MAX(capture_ring_file_max(r->max_bytes), header_len(r) + EPB_FIXED + pad4(r->snaplen));
}

unsigned capture_ring_file_number(const char *prefix, const char *name) {
        size_t n = strlen(prefix);
        unsigned v = 0, digits = 0;
        if (strncmp(name, prefix, n) != 0)
                return 0;
        const char *p = name + n;
        for (; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
                v = v * 10u + (unsigned) (*p - '0');
        return digits >= 4 && strcmp(p, ".pcapng") == 0 ? v : 0;
}

static int file_name(const CaptureRing *r, unsigned number, char *buf, size_t size) {
        int n = snprintf(buf, size, "%s%04u.pcapng", r->prefix, number);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int push_file(CaptureRing *r, RingFile f) {
        if (r->n_files == r->allocated) {
                size_t n = r->allocated ? r->allocated * 2 : CAPTURE_RING_FILES + 2;
                RingFile *v = reallocarray(r->files, n, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                r->files = v;
                r->allocated = n;
        }
        /* sorted by number: a restarted ring's scan finds them in any order */
        size_t i = r->n_files;
        while (i > 0 && r->files[i - 1].number > f.number) {
                r->files[i] = r->files[i - 1];
                i--;
        }
        r->files[i] = f;
        r->n_files++;
        r->st.files++;
        r->st.bytes += f.bytes;
        return 0;
}

/* Files an earlier writer left (a seatd restarted mid-session). */
static int scan_existing(CaptureRing *r) {
        int fd = openat(r->dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        struct dirent *de;
        int k = 0;
        while (k >= 0 && (de = readdir(d))) {
                struct stat st;
                unsigned n = capture_ring_file_number(r->prefix, de->d_name);
                if (n == 0 || fstatat(r->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                k = push_file(r, (RingFile) { .number = n, .bytes = (uint64_t) st.st_size });
        }
        closedir(d);
        return k;
}

int capture_ring_new(int dir_fd, const char *prefix, const char *ifname, uint16_t linktype, uint32_t snaplen,
                     uint64_t max_bytes, CaptureRing **ret) {
        if (!prefix || !ifname || strlen(prefix) > CAPTURE_RING_PREFIX_MAX || strlen(ifname) > CAPTURE_RING_IFNAME_MAX ||
            strchr(prefix, '/') || snaplen == 0 || snaplen > 262144u || max_bytes < 1024u * 1024u)
                return -EINVAL;
        _cleanup_(capture_ring_closep) CaptureRing *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->dir_fd = dir_fd;
        strcpy(r->prefix, prefix);
        strcpy(r->ifname, ifname);
        r->linktype = linktype;
        r->snaplen = snaplen;
        r->max_bytes = max_bytes;
        r->file_max = file_max_for(r);
        r->cur = -1;
        r->buf = malloc(FILE_BUFFER);
        if (!r->buf)
                return -ENOMEM;
        int k = scan_existing(r);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

static void put32(uint8_t *p, uint32_t v) {
        memcpy(p, &v, 4);
}
static void put16(uint8_t *p, uint16_t v) {
        memcpy(p, &v, 2);
}

static int write_all(int fd, struct iovec *iov, int n) {
        while (n > 0) {
                ssize_t w = writev(fd, iov, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                while (n > 0 && (size_t) w >= iov->iov_len) {
                        w -= (ssize_t) iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (uint8_t *) iov->iov_base + w;
                        iov->iov_len -= (size_t) w;
                }
        }
        return 0;
}

/* A write, fsync or close that failed: the capture is incomplete (the manifest says so).
 * The first error is kept. */
static int note_error(CaptureRing *r, int k) {
        if (k < 0 && !r->st.write_error)
                r->st.write_error = -k;
        return k;
}

static int flush_buf(CaptureRing *r) {
        struct iovec v = { .iov_base = r->buf, .iov_len = r->buf_len };
        if (r->cur < 0 || r->buf_len == 0)
                return 0;
        int k = write_all(r->cur, &v, 1);
        if (k < 0 && r->n_files > 0) {
                /* They were counted in the file when buffered; they never reached it. What
                 * did (a part) is cut off again: no torn block at the file's end. */
                RingFile *f = &r->files[r->n_files - 1];
                uint64_t lost = MIN(r->buf_packets, f->packets), kept = f->bytes - MIN((uint64_t) r->buf_len, f->bytes);
                f->packets -= lost;
                r->st.packets_unwritten += lost;
                (void) ftruncate(r->cur, (off_t) kept);
                r->st.bytes -= f->bytes - kept;
                f->bytes = kept;
                note_error(r, k);
        }
        r->buf_len = 0;
        r->buf_packets = 0;
        return k;
}

/* len bytes into the buffer (len ≤ FILE_BUFFER), flushing it first when they do not fit. */
static int put(CaptureRing *r, const void *p, size_t len) {
        if (r->buf_len + len > FILE_BUFFER) {
                int k = flush_buf(r);
                if (k < 0)
                        return k;
        }
        memcpy(r->buf + r->buf_len, p, len);
        r->buf_len += len;
        return 0;
}

static int write_headers(CaptureRing *r) {
        uint8_t b[SHB_LEN + 20 + 4 + CAPTURE_RING_IFNAME_MAX + 4 + 4] = {};
        uint32_t idb = idb_len(r), n = (uint32_t) strlen(r->ifname);
        put32(b, PCAPNG_SHB);
        put32(b + 4, SHB_LEN);
        put32(b + 8, PCAPNG_BOM);
        put16(b + 12, 1);           /* major */
        put16(b + 14, 0);           /* minor */
        memset(b + 16, 0xff, 8);    /* section length: not given */
        put32(b + 24, SHB_LEN);
        uint8_t *i = b + SHB_LEN;
        put32(i, PCAPNG_IDB);
        put32(i + 4, idb);
        put16(i + 8, r->linktype);
        put32(i + 12, r->snaplen);
        put16(i + 16, PCAPNG_IF_NAME);
        put16(i + 18, (uint16_t) n);
        memcpy(i + 20, r->ifname, n);
        /* then the padding (zeros), opt_endofopt (zeros), and the length again */
        put32(i + idb - 4, idb);
        return put(r, b, SHB_LEN + idb);
}

/* Room for need more bytes: the oldest files after the head go (the head and one file
 * always fit: file_max is at most half the cap). */
static void make_room(CaptureRing *r, uint64_t need) {
        while (r->st.bytes + need > r->max_bytes && r->n_files > 1) {
                char name[CAPTURE_RING_PREFIX_MAX + 32];
                RingFile f = r->files[1];
                if (file_name(r, f.number, name, sizeof(name)) < 0 || unlinkat(r->dir_fd, name, 0) < 0) {
                        /* cannot happen to a directory seatd owns; counted like a failed write */
                        if (!r->st.write_error)
                                r->st.write_error = errno ? errno : EIO;
                        return;
                }
                memmove(r->files + 1, r->files + 2, (r->n_files - 2) * sizeof(RingFile));
                r->n_files--;
                r->st.files--;
                r->st.bytes -= f.bytes;
                r->st.files_rotated++;
                r->st.packets_rotated += f.packets;
                r->st.bytes_rotated += f.bytes;
        }
}

/* sync: fsync it too. Only the head (kept for good) and what is there at the close are
 * synced: under a flood a ring file is removed again within a second, and an fsync per
 * rotation wrote every one of them to the disk first, on the CPUs the guest's traffic needs
 * (tests/bench/bench-egress.sh, capture_over_filtered). The sealed archive is fsync'ed
 * again whatever happens here (docs/evidence-format.md). */
static int close_current(CaptureRing *r, bool sync) {
        if (r->cur < 0)
                return 0;
        int k = flush_buf(r);
        if (k >= 0 && sync && fsync(r->cur) < 0)
                k = note_error(r, -errno);
        if (close(r->cur) < 0 && k >= 0)
                k = note_error(r, -errno);
        r->cur = -1;
        return k;
}

static int open_next(CaptureRing *r) {
        char name[CAPTURE_RING_PREFIX_MAX + 32];
        int k = close_current(r, r->n_files == 1 /* the head */);
        if (k < 0)
                return k;
        unsigned number = r->n_files ? r->files[r->n_files - 1].number + 1 : 1;
        uint64_t hdr = header_len(r);
        make_room(r, r->file_max); /* what the new file may grow to */
        if (r->st.write_error)
                return -r->st.write_error;
        k = file_name(r, number, name, sizeof(name));
        if (k < 0)
                return k;
        r->cur = openat(r->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (r->cur < 0)
                return -errno;
        k = push_file(r, (RingFile) { .number = number });
        if (k < 0)
                return k;
        k = write_headers(r);
        if (k < 0)
                return k;
        r->files[r->n_files - 1].bytes = hdr;
        r->st.bytes += hdr;
        return 0;
}

void capture_ring_write(CaptureRing *r, uint64_t ts_usec, const uint8_t *data, uint32_t caplen, uint32_t len) {
        static const uint8_t zeros[4] = {};
        uint8_t h[28];
        caplen = MIN(caplen, r->snaplen);
        len = MAX(len, caplen);
        r->st.packets++;
        r->st.bytes_on_wire += len;
        if (caplen < len) {
                r->st.packets_cut++;
                r->st.bytes_cut += len - caplen;
        }
        if (r->st.write_error || r->finished) {
                r->st.packets_unwritten++;
                return;
        }
        uint32_t block = capture_ring_block_bytes(caplen);
        int k = 0;
        if (r->cur < 0 || r->files[r->n_files - 1].bytes + block > r->file_max)
                k = open_next(r);
        if (k >= 0) {
                put32(h, PCAPNG_EPB);
                put32(h + 4, block);
                put32(h + 8, 0); /* the one interface */
                put32(h + 12, (uint32_t) (ts_usec >> 32));
                put32(h + 16, (uint32_t) ts_usec);
                put32(h + 20, caplen);
                put32(h + 24, len);
                uint32_t tail = block;
                if (caplen <= BIG) {
                        k = put(r, h, sizeof(h));
                        if (k >= 0)
                                k = put(r, data, caplen);
                        if (k >= 0)
                                k = put(r, zeros, pad4(caplen) - caplen);
                        if (k >= 0)
                                k = put(r, &tail, 4);
                        if (k >= 0)
                                r->buf_packets++;
                } else {
                        struct iovec v[4] = { { h, sizeof(h) }, { (void *) data, caplen },
                                              { (void *) zeros, pad4(caplen) - caplen }, { &tail, 4 } };
                        k = flush_buf(r);
                        if (k >= 0 && (k = write_all(r->cur, v, 4)) < 0) /* no torn block: cut off again */
                                (void) ftruncate(r->cur, (off_t) r->files[r->n_files - 1].bytes);
                }
        }
        if (k < 0) {
                r->st.write_error = -k;
                r->st.packets_unwritten++;
                return;
        }
        r->files[r->n_files - 1].bytes += block;
        r->files[r->n_files - 1].packets++;
        r->st.bytes += block;
}

int capture_ring_flush(CaptureRing *r) {
        return flush_buf(r);
}

void capture_ring_stats(const CaptureRing *r, CaptureStats *ret) {
        *ret = r->st;
}

/* The files after the head, closed unsynced at their rotation (or never written since a
 * restart); the current one again too, which costs little once synced. */
static void sync_ring_files(CaptureRing *r) {
        for (size_t i = 1; i < r->n_files; i++) {
                char name[CAPTURE_RING_PREFIX_MAX + 32];
                if (file_name(r, r->files[i].number, name, sizeof(name)) < 0)
                        continue;
                int fd = openat(r->dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0) {
                        note_error(r, -errno);
                        continue;
                }
                if (fsync(fd) < 0)
                        note_error(r, -errno);
                close(fd);
        }
}

void capture_ring_finish(CaptureRing *r) {
        if (!r || r->finished)
                return;
        (void) close_current(r, true);
        sync_ring_files(r);
        r->finished = true;
}

CaptureRing *capture_ring_close(CaptureRing *r) {
        if (!r)
                return NULL;
        capture_ring_finish(r);
        free(r->buf);
        free(r->files);
        free(r);
        return NULL;
}
