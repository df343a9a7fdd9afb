/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "guest-files.h"
#include "common/log.h"
#include "common/strprintf.h"

GuestFiles *guest_files_free(GuestFiles *f) {
        if (!f)
                return NULL;
        for (size_t i = 0; i < f->n_entries; i++)
                FREE_MANY(f->entries[i].guest_path, f->entries[i].host_path);
        FREE_MANY(f->entries, f->index_path);
        return mfree(f);
}

#if HAVE_LIBGUESTFS

#include "guestfs-util.h"

#define LSTAT_BATCH 200
#define INDEX_PATH_SHOWN 600U

DEFINE_TRIVIAL_CLEANUP_FUNC(struct guestfs_statns *, guestfs_free_statns)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct guestfs_statns_list *, guestfs_free_statns_list)

typedef struct Collector {
        guestfs_h *g;
        const char *context, *staging;
        const GuestFilesLimits *lim;
        GuestFiles *out;
        FILE *index;
        uint64_t index_bytes;
        bool index_cut;
        uint64_t visited;
        unsigned seq;            /* staging names */
} Collector;

/* One line of the index: "ACTION TYPE SIZE PATH[ NOTE]", the path escaped. */
static void index_line(Collector *c, const char *action, const char *type, const char *size, const char *path,
                       const char *fmt, ...) _printf_(6, 7);
static void index_line(Collector *c, const char *action, const char *type, const char *size, const char *path,
                       const char *fmt, ...) {
        if (c->index_cut)
                return;
        if (c->index_bytes > GUEST_FILES_INDEX_MAX) {
                fputs("... the index is cut here (over its cap); the counts in the manifest are complete\n", c->index);
                c->index_cut = true;
                return;
        }
        _cleanup_free_ char *esc = log_escape(path, strlen(path), INDEX_PATH_SHOWN), *note = NULL;
        if (fmt) {
                va_list ap;
                va_start(ap, fmt);
                note = vstrprintf(fmt, ap);
                va_end(ap);
        }
        int n = fprintf(c->index, "%s %s %s %s%s%s\n", action, type, size, esc ? esc : "?", note ? " " : "",
                        note ? note : "");
        if (n > 0)
                c->index_bytes += (uint64_t) n;
}

static const char *type_name(int64_t mode) {
        switch ((mode_t) mode & S_IFMT) {
        case S_IFREG: return "file";
        case S_IFDIR: return "dir";
        case S_IFLNK: return "symlink";
        case S_IFIFO: return "fifo";
        case S_IFSOCK: return "socket";
        case S_IFCHR: return "chardev";
        case S_IFBLK: return "blockdev";
        default: return "unknown";
        }
}

static void skip(Collector *c, const char *path, const char *type, const char *why) {
        c->out->skipped++;
        index_line(c, "skipped", type, "-", path, "(%s)", why);
}

/* A libguestfs call failed: an entry's own problem, unless the appliance is gone. */
static int entry_failed(Collector *c, const char *path, const char *what, SeatError **ret_error) {
        if (!guestfs_is_ready(c->g))
                return image_guestfs_error(c->g, c->context, EIO, what, ret_error);
        const char *msg = guestfs_last_error(c->g);
        _cleanup_free_ char *why = NULL;
        if (asprintf(&why, "%s: %.200s", what, msg ? msg : "failed") < 0)
                return -ENOMEM;
        for (char *p = why; *p; p++)
                if (*p == '\n' || *p == '\r')
                        *p = ' ';
        skip(c, path, "-", why);
        return 0;
}

static int add_entry(Collector *c, const char *guest_path, char *host_path, GuestEntryKind kind, uint64_t size,
                     uint64_t original) {
        GuestFiles *f = c->out;
        GuestEntry *n = realloc(f->entries, (f->n_entries + 1) * sizeof(GuestEntry));
        if (!n)
                return -ENOMEM;
        f->entries = n;
        char *gp = strdup(guest_path);
        if (!gp)
                return -ENOMEM;
        f->entries[f->n_entries++] = (GuestEntry) { .guest_path = gp, .host_path = host_path, .kind = kind,
                                                    .size = size, .original_size = original };
        f->bytes += size;
        if (kind == GUEST_ENTRY_SYMLINK)
                f->symlinks++;
        else
                f->files++;
        if (size < original)
                f->truncated++;
        return 0;
}

static int next_staging_path(Collector *c, char **ret) {
        return asprintf(ret, "%s/g%06u", c->staging, ++c->seq) < 0 ? -ENOMEM : 0;
}

static bool over_file_count(Collector *c) {
        return c->out->files + c->out->symlinks >= c->lim->max_files;
}

static int take_symlink(Collector *c, const char *path, SeatError **ret_error) {
        if (over_file_count(c)) {
                skip(c, path, "symlink", "over max_files");
                return 0;
        }
        _cleanup_free_ char *target = guestfs_readlink(c->g, path), *host = NULL;
        if (!target)
                return entry_failed(c, path, "readlink", ret_error);
        size_t len = strlen(target);
        if (c->out->bytes + len > c->lim->max_bytes) {
                skip(c, path, "symlink", "max_bytes reached");
                return 0;
        }
        if (next_staging_path(c, &host) < 0 || write_file_atomic(host, target, len, 0600) < 0)
                return seat_error_set(ret_error, errno ? errno : EIO, "%s: cannot stage a symlink record in '%s': %m",
                                      c->context, c->staging);
        _cleanup_free_ char *esc = log_escape(target, len, INDEX_PATH_SHOWN);
        char size[24];
        snprintf(size, sizeof(size), "%zu", len);
        index_line(c, "taken", "symlink", size, path, "-> %s (a record of the link, not followed)", esc ? esc : "?");
        return add_entry(c, path, TAKE_PTR(host), GUEST_ENTRY_SYMLINK, len, len);
}

static int take_file(Collector *c, const char *path, uint64_t size, SeatError **ret_error) {
        if (over_file_count(c)) {
                skip(c, path, "file", "over max_files");
                return 0;
        }
        uint64_t room = c->out->bytes < c->lim->max_bytes ? c->lim->max_bytes - c->out->bytes : 0;
        uint64_t want = MIN(size, MIN(c->lim->max_file_bytes, room));
        _cleanup_free_ char *host = NULL;
        if (next_staging_path(c, &host) < 0)
                return -ENOMEM;
        if (want == 0) {
                _cleanup_close_ int fd = open(host, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        return seat_error_set(ret_error, errno, "%s: cannot create '%s': %m", c->context, host);
        } else {
                int64_t t0 = now_monotonic_ms();
                if (guestfs_download_offset(c->g, path, host, 0, (int64_t) want) < 0) {
                        (void) unlink(host);
                        return entry_failed(c, path, "download", ret_error);
                }
                log_debug("%s: %" PRIu64 " bytes downloaded in %" PRId64 " ms", c->context, want, now_monotonic_ms() - t0);
        }
        struct stat st;
        if (lstat(host, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size != want) {
                (void) unlink(host);
                skip(c, path, "file", "the copy has another size than asked for");
                return 0;
        }
        char sz[48];
        if (want < size)
                snprintf(sz, sizeof(sz), "%" PRIu64 "/%" PRIu64, want, size);
        else
                snprintf(sz, sizeof(sz), "%" PRIu64, size);
        if (want < size)
                index_line(c, "cut", "file", sz, path, "(%s)",
                           want == c->lim->max_file_bytes ? "max_file_bytes" : "max_bytes reached");
        else
                index_line(c, "taken", "file", sz, path, NULL);
        return add_entry(c, path, TAKE_PTR(host), GUEST_ENTRY_FILE, want, size);
}

static int visit(Collector *c, const char *path, const struct guestfs_statns *st, unsigned depth,
                 SeatError **ret_error);

static char *join(const char *dir, const char *name) {
        char *p = NULL;
        if (asprintf(&p, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) < 0)
                return NULL;
        return p;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/*
 * What guestfs_ls0 streams out of the appliance, read through a pipe by a thread of our own
 * as it comes: a guest can put millions of long names in one directory, and libguestfs
 * writes a FileOut listing wherever it is told, unbounded. So it never goes to a file: at
 * most GUEST_FILES_LISTING_MAX bytes are kept in memory, then the transfer is cancelled
 * (guestfs_user_cancel, thread safe) and the rest drained and dropped.
 */
typedef struct ListingReader {
        guestfs_h *g;
        int fd;
        char *buf;
        size_t len;
        bool cut;
        int error;               /* -errno of read() */
} ListingReader;

static void *listing_reader(void *p) {
        ListingReader *r = p;
        char chunk[65536];
        for (;;) {
                ssize_t n = read(r->fd, chunk, sizeof(chunk));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r->error = -errno;
                        break;
                }
                if (n == 0)
                        break; /* every writer closed: guestfs_ls0 returned and we closed ours */
                if (r->cut)
                        continue; /* draining until the cancelled transfer stops */
                size_t take = MIN((size_t) n, GUEST_FILES_LISTING_MAX - r->len);
                memcpy(r->buf + r->len, chunk, take);
                r->len += take;
                if (take < (size_t) n) {
                        r->cut = true;
                        (void) guestfs_user_cancel(r->g);
                }
        }
        return NULL;
}

/* The listing of path into *ret (at most GUEST_FILES_LISTING_MAX bytes); *ret_cut when
 * there was more. 1: the directory could not be listed (recorded in the index). */
static int read_listing(Collector *c, const char *path, char **ret, size_t *ret_len, bool *ret_cut,
                        SeatError **ret_error) {
        _cleanup_free_ char *buf = malloc(GUEST_FILES_LISTING_MAX), *dev = NULL;
        int fds[2];
        if (!buf)
                return -ENOMEM;
        if (pipe2(fds, O_CLOEXEC) < 0)
                return seat_error_set(ret_error, errno, "%s: cannot make a pipe for a listing: %m", c->context);
        _cleanup_close_ int rfd = fds[0], wfd = fds[1];
        if (asprintf(&dev, "/dev/fd/%d", wfd) < 0)
                return -ENOMEM;
        ListingReader reader = { .g = c->g, .fd = rfd, .buf = buf };
        pthread_t t;
        int e = pthread_create(&t, NULL, listing_reader, &reader);
        if (e != 0)
                return seat_error_set(ret_error, e, "%s: cannot start a thread to read a listing: %s", c->context,
                                      strerror(e));
        int r = guestfs_ls0(c->g, path, dev);
        wfd = safe_close(wfd); /* libguestfs closed its own: the reader sees the end */
        pthread_join(t, NULL);
        if (reader.error < 0)
                return seat_error_set(ret_error, -reader.error, "%s: cannot read a listing: %s", c->context,
                                      strerror(-reader.error));
        if (r < 0 && !reader.cut) {
                r = entry_failed(c, path, "list", ret_error);
                return r < 0 ? r : 1;
        }
        if (r < 0 && !guestfs_is_ready(c->g)) /* a cancel leaves the appliance usable; anything else does not */
                return image_guestfs_error(c->g, c->context, EIO, "list", ret_error);
        *ret = TAKE_PTR(buf);
        *ret_len = reader.len;
        *ret_cut = reader.cut;
        return 0;
}

/* The names in a directory, sorted, at most GUEST_FILES_DIR_NAMES_MAX (*ret_more counts the
 * rest seen); *ret_cut: the listing itself was over its cap, more names were not seen. */
static int list_dir(Collector *c, const char *path, char ***ret, size_t *ret_n, uint64_t *ret_more, bool *ret_cut,
                    SeatError **ret_error) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        bool cut = false;
        int r = read_listing(c, path, &buf, &len, &cut, ret_error);
        if (r != 0)
                return r;
        if (cut) /* the last name may be cut in the middle: only whole ones count */
                while (len > 0 && buf[len - 1] != '\0')
                        len--;
        size_t n = 0, cap = 0;
        uint64_t more = 0;
        _cleanup_strv_free_ char **names = NULL;
        for (size_t i = 0; i < len;) {
                size_t l = strnlen(buf + i, len - i);
                if (l > 0 && strcmp(buf + i, ".") && strcmp(buf + i, "..")) {
                        if (n >= GUEST_FILES_DIR_NAMES_MAX)
                                more++;
                        else {
                                if (n + 1 >= cap) {
                                        cap = cap ? 2 * cap : 64;
                                        char **nn = realloc(names, cap * sizeof(char *));
                                        if (!nn)
                                                return -ENOMEM;
                                        names = nn;
                                }
                                if (!(names[n] = strndup(buf + i, l)))
                                        return -ENOMEM;
                                names[++n] = NULL;
                        }
                }
                i += l + 1;
        }
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_str);
        *ret = TAKE_PTR(names);
        *ret_n = n;
        *ret_more = more;
        *ret_cut = cut;
        return 0;
}

static int visit_dir(Collector *c, const char *path, unsigned depth, SeatError **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;
        uint64_t more = 0;
        bool cut = false;
        if (depth >= GUEST_FILES_DEPTH_MAX) {
                skip(c, path, "dir", "deeper than the depth cap");
                return 0;
        }
        int r = list_dir(c, path, &names, &n, &more, &cut, ret_error);
        if (r != 0)
                return r < 0 ? r : 0;
        if (cut) {
                /* How many names were not seen is not known: counted as one skipped entry. */
                c->out->skipped++;
                c->out->listings_cut++;
                index_line(c, "cut", "dir", "-", path,
                           "(its listing is over the cap of %u bytes: only the %zu names in its first part were looked at, the rest not read)",
                           GUEST_FILES_LISTING_MAX, n + (size_t) more);
        }
        if (more > 0) {
                c->out->skipped += more;
                index_line(c, "skipped", "-", "-", path, "(%" PRIu64 " more names than the cap of %u per directory)", more,
                           GUEST_FILES_DIR_NAMES_MAX);
        }
        for (size_t i = 0; i < n; i += LSTAT_BATCH) {
                size_t k = MIN((size_t) LSTAT_BATCH, n - i);
                if (c->visited >= GUEST_FILES_VISIT_MAX) {
                        c->out->skipped += n - i;
                        index_line(c, "skipped", "-", "-", path, "(%zu entries: over the cap of %u entries looked at)",
                                   n - i, GUEST_FILES_VISIT_MAX);
                        return 0;
                }
                char *saved = names[i + k];
                names[i + k] = NULL; /* the batch as its own NULL-terminated list */
                _cleanup_(guestfs_free_statns_listp) struct guestfs_statns_list *sts = guestfs_lstatnslist(c->g, path, names + i);
                names[i + k] = saved;
                if (!sts || sts->len != k) {
                        r = entry_failed(c, path, "lstat the entries", ret_error);
                        if (r < 0)
                                return r;
                        c->out->skipped += k - 1; /* entry_failed counted one */
                        continue;
                }
                for (size_t j = 0; j < k; j++) {
                        _cleanup_free_ char *child = join(path, names[i + j]);
                        if (!child)
                                return -ENOMEM;
                        c->visited++;
                        if (sts->val[j].st_ino == -1) {
                                skip(c, child, "-", "cannot lstat");
                                continue;
                        }
                        r = visit(c, child, &sts->val[j], depth + 1, ret_error);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int visit(Collector *c, const char *path, const struct guestfs_statns *st, unsigned depth,
                 SeatError **ret_error) {
        mode_t mode = (mode_t) st->st_mode;
        if (S_ISLNK(mode))
                return take_symlink(c, path, ret_error);
        if (S_ISREG(mode))
                return take_file(c, path, st->st_size > 0 ? (uint64_t) st->st_size : 0, ret_error);
        if (S_ISDIR(mode))
                return visit_dir(c, path, depth, ret_error);
        skip(c, path, type_name(st->st_mode), "not a regular file, directory or symlink");
        return 0;
}

static int visit_root(Collector *c, const char *given, SeatError **ret_error) {
        _cleanup_free_ char *path = strdup(given);
        if (!path)
                return -ENOMEM;
        for (size_t n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
                path[n - 1] = '\0';
        c->visited++;
        _cleanup_(guestfs_free_statnsp) struct guestfs_statns *st = guestfs_lstatns(c->g, path);
        if (!st) {
                int e = guestfs_last_errno(c->g);
                if (e == ENOENT || e == ENOTDIR) {
                        index_line(c, "absent", "-", "-", path, NULL);
                        return 0;
                }
                return entry_failed(c, path, "lstat", ret_error);
        }
        return visit(c, path, st, 0, ret_error);
}

/* The filesystem holding the paths: the one named, or the disk's only one. */
static int mount_guest(Collector *c, const char *filesystem, SeatError **ret_error) {
        _cleanup_strv_free_ char **fss = NULL;
        const char *dev = filesystem;
        if (!dev) {
                fss = guestfs_list_filesystems(c->g);
                if (!fss)
                        return image_guestfs_error(c->g, c->context, EIO, "list filesystems", ret_error);
                size_t found = 0;
                for (size_t i = 0; fss[i] && fss[i + 1]; i += 2)
                        if (strcmp(fss[i + 1], "unknown") && strcmp(fss[i + 1], "swap")) {
                                dev = fss[i];
                                found++;
                        }
                if (found != 1)
                        return seat_error_set(ret_error, ENODEV,
                                              "%s: the disk holds %zu filesystems: name the one with the evidence paths as guest_init.filesystem in the image manifest",
                                              c->context, found);
        }
        if (guestfs_mount_ro(c->g, dev, "/") < 0)
                return image_guestfs_error(c->g, c->context, ENODEV, "mount the guest's filesystem read-only", ret_error);
        return 0;
}

int guest_files_collect(const char *disk, ImageFormat format, const char *filesystem, char *const *paths,
                        const GuestFilesLimits *limits, const ImageInspectOptions *opts, const char *context,
                        const char *staging_dir, GuestFiles **ret, SeatError **ret_error) {
        _cleanup_(guestfs_closep) guestfs_h *g = NULL;
        _cleanup_(guest_files_freep) GuestFiles *f = calloc(1, sizeof(GuestFiles));
        _cleanup_free_ char *index_path = NULL;
        int r;

        if (!f || asprintf(&index_path, "%s/index.txt", staging_dir) < 0)
                return -ENOMEM;
        _cleanup_close_ int ifd = open(index_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (ifd < 0)
                return seat_error_set(ret_error, errno, "%s: cannot create '%s': %m", context, index_path);
        FILE *index = fdopen(TAKE_FD(ifd), "w");
        if (!index)
                return -ENOMEM;
        Collector c = { .context = context, .staging = staging_dir, .lim = limits, .out = f, .index = index };
        fprintf(index, "# guest files taken for evidence: ACTION TYPE SIZE PATH [NOTE]; caps: %" PRIu64 " bytes, %" PRIu64
                " per file, %" PRIu64 " files\n", limits->max_bytes, limits->max_file_bytes, limits->max_files);

        r = image_guestfs_new(context, opts, &g, ret_error);
        if (r >= 0)
                r = image_guestfs_add_and_launch(g, context, disk, image_format_to_string(format), opts, ret_error);
        bool launched = r >= 0;
        c.g = g;
        if (r >= 0)
                r = mount_guest(&c, filesystem, ret_error);
        for (char *const *p = paths; r >= 0 && p && *p; p++)
                r = visit_root(&c, *p, ret_error);
        /* Up, then gone: what the guest's disk did to the appliance (a crash, a kill). */
        if (r < 0 && r != -ENOMEM && r != -ENODEV && launched && !guestfs_is_ready(g))
                r = -EPIPE;
        if (g)
                (void) guestfs_shutdown(g); /* read-only: nothing to flush; stops the appliance now */
        if (fflush(index) != 0 || fsync(fileno(index)) < 0) {
                if (r >= 0)
                        r = seat_error_set(ret_error, errno, "%s: cannot write '%s': %m", context, index_path);
        }
        fclose(index);
        if (r < 0)
                return r;
        f->index_path = TAKE_PTR(index_path);
        *ret = TAKE_PTR(f);
        return 0;
}

#else /* !HAVE_LIBGUESTFS */

int guest_files_collect(const char *disk, ImageFormat format, const char *filesystem, char *const *paths,
                        const GuestFilesLimits *limits, const ImageInspectOptions *opts, const char *context,
                        const char *staging_dir, GuestFiles **ret, SeatError **ret_error) {
        return seat_error_set(ret_error, EOPNOTSUPP,
                              "%s: seatd was built without libguestfs and cannot read guest files for evidence (install libguestfs-dev and rebuild)",
                              context);
}

#endif
