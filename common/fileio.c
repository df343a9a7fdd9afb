/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "macro.h"

/* write() or, for a socket, send() without SIGPIPE, until all of it is out. */
static int write_all(int fd, const void *buf, size_t len, bool sock) {
        const char *p = buf;

        while (len > 0) {
                ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t) n;
        }
        return 0;
}

int loop_write(int fd, const void *buf, size_t len) {
        return write_all(fd, buf, len, false);
}

/* loop_write for a socket whose peer may go at any time: a gone peer is -EPIPE, never the
 * SIGPIPE that would kill a library caller that did not think to ignore it. */
int loop_send(int fd, const void *buf, size_t len) {
        return write_all(fd, buf, len, true);
}

ssize_t loop_read(int fd, void *buf, size_t len) {
        char *p = buf;
        size_t done = 0;

        while (done < len) {
                ssize_t n = read(fd, p + done, len - done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        return (ssize_t) done;
}

int fsync_parent_dir(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        if (fsync(dfd) < 0)
                return negative_errno();
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        int r;

        /* Beside it, hidden and random (mkostemp: O_EXCL, 0600 until the fchmod below): a
         * name left by a crash is never taken for the file itself by a directory listing
         * (a name starting with '.' is no image's, seat's or link's), and a PID used again
         * after a restart cannot collide with it (O_EXCL refused every later write). */
        const char *slash = strrchr(path, '/');
        int dir_len = slash ? (int) (slash - path + 1) : 0;
        if (asprintf(&tmp, "%.*s.%s.XXXXXX", dir_len, path, slash ? slash + 1 : path) < 0)
                return -ENOMEM;

        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = loop_write(fd, data, len);
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = negative_errno();
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r >= 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        return fsync_parent_dir(path);
}

int read_file_capped(const char *path, size_t max, char **ret, size_t *ret_len) {
        /* O_NONBLOCK: a FIFO at path is refused (not a regular file), not waited on. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;

        /* Read one byte past the cap: a file that grew since fstat is caught too. */
        _cleanup_free_ char *buf = malloc(max + 2);
        if (!buf)
                return -ENOMEM;
        ssize_t n = loop_read(fd, buf, max + 1);
        if (n < 0)
                return (int) n;
        if ((size_t) n > max)
                return -EFBIG;
        buf[n] = '\0';
        *ret = TAKE_PTR(buf);
        if (ret_len)
                *ret_len = (size_t) n;
        return 0;
}

/* File status flags (F_GETFL/F_SETFL) and descriptor flags (F_GETFD/F_SETFD) are switched
 * alike: read, change one bit, write back only when it changed. */
static int fd_update_flag(int fd, int get_cmd, int set_cmd, int flag, int on) {
        int flags = fcntl(fd, get_cmd);
        if (flags < 0)
                return negative_errno();
        int nflags = on ? flags | flag : flags & ~flag;
        if (nflags != flags && fcntl(fd, set_cmd, nflags) < 0)
                return negative_errno();
        return 0;
}

int fd_set_nonblock(int fd, int on) {
        return fd_update_flag(fd, F_GETFL, F_SETFL, O_NONBLOCK, on);
}

int fd_set_cloexec(int fd, int on) {
        return fd_update_flag(fd, F_GETFD, F_SETFD, FD_CLOEXEC, on);
}

void sibling_program_path(const char *const *rel, size_t n_rel, const char *fallback, char *buf, size_t size) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n > 0) {
                self[n] = '\0';
                char *slash = strrchr(self, '/');
                if (slash) {
                        *slash = '\0';
                        for (size_t i = 0; i < n_rel; i++)
                                if (snprintf(buf, size, "%s%s", self, rel[i]) < (int) size && access(buf, X_OK) == 0)
                                        return;
                }
        }
        (void) snprintf(buf, size, "%s", fallback);
}

static int64_t now_ms(clockid_t clock) {
        struct timespec ts;
        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t now_monotonic_ms(void) {
        return now_ms(CLOCK_MONOTONIC);
}

int64_t now_boottime_ms(void) {
        return now_ms(CLOCK_BOOTTIME);
}

int64_t now_realtime_ms(void) {
        return now_ms(CLOCK_REALTIME);
}

/* from into a new file to (mode), in the kernel where it can (a reflink on filesystems
 * that share extents), else through memory. */
int file_copy(const char *from, const char *to, mode_t mode) {
        _cleanup_close_ int src = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (src < 0)
                return -errno;
        _cleanup_close_ int dst = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
        if (dst < 0)
                return -errno;
        for (;;) {
                ssize_t n = copy_file_range(src, NULL, dst, NULL, 1 << 30, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP))
                        break; /* below: through memory */
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
        }
        uint8_t buf[64 * 1024];
        for (;;) {
                ssize_t n = loop_read(src, buf, sizeof(buf));
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return 0;
                int r = loop_write(dst, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
}

int remove_tree_at(int dfd, const char *name, unsigned depth) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF; /* the DIR owns it now */
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        continue;
                if (errno == EISDIR && depth > 0)
                        r = remove_tree_at(dirfd(d), de->d_name, depth - 1);
                else
                        r = -errno;
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r >= 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                r = -errno;
        return r;
}
