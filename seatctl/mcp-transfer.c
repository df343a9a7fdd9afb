/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * upload and download: files between the agent's host and the seat, only beneath the one
 * directory --transfer-dir names (off without it). The host path is the agent's input:
 * it is resolved with openat2(RESOLVE_BENEATH), so no "..", absolute path or symlink
 * leads out of that directory, and a download never replaces a file (O_EXCL) and removes
 * what it made when it fails. The seat's side runs as the session's guest user, in
 * execs the audit log records like every other tool call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/fileio.h"
#include "mcp-tools.h"

static int transfer_dirfd = -EBADF;

int mcp_transfer_enable(const char *dir) {
        int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        transfer_dirfd = fd;
        return 0;
}

bool mcp_transfer_enabled(void) {
        return transfer_dirfd >= 0;
}

/* The host path relative to the transfer directory; an absolute one must lie in it. */
static int host_open(const char *path, int flags, mode_t mode, char *why, size_t size) {
        struct open_how how = { .flags = (uint64_t) flags | O_CLOEXEC | O_NOCTTY, .mode = mode,
                                .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
        if (path[0] == '/') {
                snprintf(why, size, "host_path must be relative to the transfer directory");
                return -EINVAL;
        }
        int fd = (int) syscall(SYS_openat2, transfer_dirfd, path, &how, sizeof(how));
        if (fd < 0) {
                int e = errno;
                if (e == EXDEV)
                        snprintf(why, size, "host_path leads out of the transfer directory");
                else if (e == ELOOP)
                        snprintf(why, size, "host_path is a symbolic link (not followed)");
                else if (e == EEXIST)
                        snprintf(why, size, "host_path exists already: a download never replaces a file");
                else
                        snprintf(why, size, "host_path: %s", strerror(e));
                return -e;
        }
        return fd;
}

json_object *mcp_run_upload(McpCall *call) {
        const char *host = mcp_arg_str(call->arguments, "host_path"), *seat = mcp_arg_str(call->arguments, "seat_path");
        char why[256];
        struct stat st;
        _cleanup_close_ int fd = host_open(host, O_RDONLY | O_NOFOLLOW, 0, why, sizeof(why));
        if (fd < 0)
                return mcp_tool_fail("cannot upload: %s", why);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return mcp_tool_fail("cannot upload: host_path is not a regular file");
        if ((uint64_t) st.st_size > MCP_TRANSFER_MAX)
                return mcp_tool_fail("cannot upload: host_path is over %u MiB", MCP_TRANSFER_MAX >> 20);

        _cleanup_free_ uint8_t *buf = malloc(MCP_STDIN_MAX);
        uint64_t done = 0;
        if (!buf)
                return NULL;
        /* Chunks of at most seat.exec's stdin cap: the first creates, the others append. */
        do {
                ssize_t n = loop_read(fd, buf, MCP_STDIN_MAX);
                if (n < 0)
                        return mcp_tool_fail("cannot upload: read host_path: %s", strerror((int) -n));
                if (n == 0 && done > 0)
                        break;
                json_object *result = NULL;
                int r = mcp_seat_write(call, seat, done == 0, buf, (size_t) n, &result);
                if (r < 0 || result)
                        return result; /* cancelled (NULL), or the tool error */
                done += (uint64_t) n;
                mcp_call_progress(call, (double) done, NULL);
                if ((size_t) n < MCP_STDIN_MAX)
                        break;
        } while (done <= MCP_TRANSFER_MAX);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "host_path", json_object_new_string(host));
        json_object_object_add(o, "seat_path", json_object_new_string(seat));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) done));
        return mcp_tool_ok(o);
}

json_object *mcp_run_download(McpCall *call) {
        const char *host = mcp_arg_str(call->arguments, "host_path"), *seat = mcp_arg_str(call->arguments, "seat_path");
        char why[256];
        _cleanup_close_ int fd = host_open(host, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, why, sizeof(why));
        if (fd < 0)
                return mcp_tool_fail("cannot download: %s", why);
        uint64_t bytes = 0;
        json_object *result = NULL;
        int r = mcp_seat_read_to_fd(call, seat, fd, MCP_TRANSFER_MAX, &bytes, &result);
        if (r < 0 || result) {
                /* Nothing half-made is left: the file was ours (O_EXCL). */
                (void) unlinkat(transfer_dirfd, host, 0);
                return result;
        }
        if (fsync(fd) < 0) {
                (void) unlinkat(transfer_dirfd, host, 0);
                return mcp_tool_fail("cannot download: fsync host_path: %s", strerror(errno));
        }
        json_object *o = json_object_new_object();
        json_object_object_add(o, "host_path", json_object_new_string(host));
        json_object_object_add(o, "seat_path", json_object_new_string(seat));
        json_object_object_add(o, "bytes", json_object_new_int64((int64_t) bytes));
        return mcp_tool_ok(o);
}
