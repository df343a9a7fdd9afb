/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* write() all of it, retrying on EINTR and short writes (blocking fds). */
int loop_write(int fd, const void *buf, size_t len);
int loop_send(int fd, const void *buf, size_t len); /* a socket: -EPIPE, no SIGPIPE */
/* read() until len bytes or EOF; returns bytes read or -errno. */
ssize_t loop_read(int fd, void *buf, size_t len);

/*
 * Write a whole file atomically: temp file beside it (O_CLOEXEC, mode), write, fsync,
 * rename over path, fsync the directory. On failure nothing at path changes and the
 * temp file is removed.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/* fsync the directory that holds path, so a rename or a new file in it survives a crash. */
int fsync_parent_dir(const char *path);

/* Read a whole regular file of at most max bytes (-EFBIG beyond). NUL-terminated. */
int read_file_capped(const char *path, size_t max, char **ret, size_t *ret_len);

int fd_set_nonblock(int fd, int on);
int fd_set_cloexec(int fd, int on);

/* Milliseconds on CLOCK_MONOTONIC / CLOCK_BOOTTIME / CLOCK_REALTIME. */
int64_t now_monotonic_ms(void);
int64_t now_boottime_ms(void);
int64_t now_realtime_ms(void);

/* The path of a program that seatd starts (seatd-collect, seat-dnsguard): the first of
 * rel ("/name", "/../dir/name": relative to the directory of the running executable, so
 * an installed seatd and a build tree both find theirs) that is executable, else fallback.
 * Cut to size like snprintf(). */
void sibling_program_path(const char *const *rel, size_t n_rel, const char *fallback, char *buf, size_t size);

/* A new file `to` (O_EXCL, mode) with the bytes of `from`: copy_file_range, else read/write. -errno. */
int file_copy(const char *from, const char *to, mode_t mode);

/* dfd/name (a directory) and what it holds, subdirectories down to depth levels below it
 * (0: its files only); never follows a link (it is removed); a missing name is 0; -errno
 * at the first thing that could not go. */
int remove_tree_at(int dfd, const char *name, unsigned depth);
