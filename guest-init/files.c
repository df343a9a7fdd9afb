/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * file_put / file_get: stateless chunks on guest paths. The agent is guest root, so these
 * are guest-root operations; what matters here is that a request can never hang the
 * (single-threaded) agent: only regular files are read or written.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "common/log.h"

static int files_check_path(Agent *a, int64_t id, const char *path) {
        if (!path || path[0] != '/')
                return agent_send_error(a, id, AGENT_ERR_INVALID, "field 'path' must be an absolute path");
        return 1;
}

static const char *files_error_code(int error) {
        return error == ENOENT ? AGENT_ERR_NOT_FOUND : AGENT_ERR_IO;
}

/* Open without blocking (a FIFO would stall the agent) and insist on a regular file. */
static int files_open_regular(const char *path, int flags, mode_t mode, int *ret_fd, struct stat *ret_st) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode);
        if (fd < 0)
                return -errno;
        if (fstat(fd, ret_st) < 0)
                return -errno;
        if (!S_ISREG(ret_st->st_mode))
                return -EINVAL;
        /* Regular files ignore O_NONBLOCK, but be explicit. */
        if (fcntl(fd, F_SETFL, 0) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int pwrite_all(int fd, const uint8_t *data, size_t len, off_t offset) {
        while (len > 0) {
                ssize_t n = pwrite(fd, data, len, offset);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                data += n;
                len -= (size_t) n;
                offset += n;
        }
        return 0;
}

static ssize_t pread_all(int fd, uint8_t *buf, size_t len, off_t offset) {
        size_t done = 0;

        while (done < len) {
                ssize_t n = pread(fd, buf + done, len - done, offset + (off_t) done);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                done += (size_t) n;
        }
        return (ssize_t) done;
}

int files_handle_put(Agent *a, const AgentMsg *m) {
        _cleanup_close_ int fd = -EBADF;
        const char *path = m->file_put.path;
        int64_t offset = m->file_put.offset;
        uint64_t end;
        struct stat st;
        int r;

        r = files_check_path(a, m->id, path);
        if (r <= 0)
                return r;
        if (offset < 0)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "field 'offset' must not be negative");

        end = (uint64_t) offset + m->file_put.len;
        if (end > a->limits.max_file)
                return agent_send_error(a, m->id, AGENT_ERR_LIMIT, "file '%s' would grow beyond %" PRIu64 " bytes",
                                        path, a->limits.max_file);

        if (offset == 0) {
                mode_t mode = (mode_t) m->file_put.mode & 07777;

                r = files_open_regular(path, O_WRONLY | O_CREAT | O_TRUNC, mode, &fd, &st);
                if (r == -EINVAL)
                        return agent_send_error(a, m->id, AGENT_ERR_INVALID, "'%s' is not a regular file", path);
                if (r < 0)
                        return agent_send_error(a, m->id, files_error_code(-r), "open '%s': %s", path, strerror(-r));
                /* The mode applies whether the file was created or truncated (and whatever the umask). */
                if (fchmod(fd, mode) < 0)
                        return agent_send_error(a, m->id, AGENT_ERR_IO, "chmod '%s': %s", path, strerror(errno));
        } else {
                r = files_open_regular(path, O_WRONLY, 0, &fd, &st);
                if (r == -EINVAL)
                        return agent_send_error(a, m->id, AGENT_ERR_INVALID, "'%s' is not a regular file", path);
                if (r < 0)
                        return agent_send_error(a, m->id, files_error_code(-r), "open '%s': %s", path, strerror(-r));
                if (st.st_size != offset)
                        return agent_send_error(a, m->id, AGENT_ERR_INVALID,
                                                "field 'offset' is %" PRId64 " but '%s' has %" PRId64 " bytes",
                                                offset, path, (int64_t) st.st_size);
        }

        r = pwrite_all(fd, m->file_put.data, m->file_put.len, (off_t) offset);
        if (r < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "write '%s': %s", path, strerror(-r));

        if (m->file_put.final && fsync(fd) < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "fsync '%s': %s", path, strerror(errno));

        log_debug("file_put %" PRId64 ": %zu bytes at %" PRId64 "%s", m->id, m->file_put.len, offset,
                  m->file_put.final ? " (final)" : "");
        return agent_send_ok(a, m->id, (int64_t) end);
}

int files_handle_get(Agent *a, const AgentMsg *m) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        AgentMsg reply = { .type = AGENT_MSG_DATA, .id = m->id };
        const char *path = m->file_get.path;
        int64_t offset = m->file_get.offset;
        size_t length;
        struct stat st;
        ssize_t n;
        int r;

        r = files_check_path(a, m->id, path);
        if (r <= 0)
                return r;
        if (offset < 0 || m->file_get.length < 0)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "fields 'offset' and 'length' must not be negative");

        /* A chunk must fit in one frame of this agent's max_frame: the host asks again. */
        length = (size_t) MIN((uint64_t) m->file_get.length, (uint64_t) agent_chunk_max(a));

        r = files_open_regular(path, O_RDONLY, 0, &fd, &st);
        if (r == -EINVAL)
                return agent_send_error(a, m->id, AGENT_ERR_INVALID, "'%s' is not a regular file", path);
        if (r < 0)
                return agent_send_error(a, m->id, files_error_code(-r), "open '%s': %s", path, strerror(-r));

        buf = malloc(MAX(length, (size_t) 1));
        if (!buf)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "out of memory");

        n = pread_all(fd, buf, length, (off_t) offset);
        if (n < 0)
                return agent_send_error(a, m->id, AGENT_ERR_IO, "read '%s': %s", path, strerror((int) -n));

        reply.data.data = buf;
        reply.data.len = (size_t) n;
        reply.data.size = st.st_size;
        /* A short read is the end; so is reaching st_size (procfs files report 0 there). */
        reply.data.eof = (size_t) n < length || (st.st_size > 0 && offset + n >= st.st_size) ||
                         (length == 0 && offset >= st.st_size);
        return agent_send(a, &reply);
}
