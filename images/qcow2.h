/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pinning disk formats: a pure check of a file's first bytes against the format its
 * signed manifest names. Nothing is ever probed. */

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "manifest.h"

#define QCOW2_HEAD_MAX (1024u * 1024u) /* bytes of the file's start the check needs at most */

/*
 * raw: refused when it starts with the qcow2 magic (a format confusion waiting to happen).
 * qcow2: version 2 or 3, no backing file, no external data file, not encrypted, not
 * dirty or corrupt, no unknown incompatible feature; header and extensions within head.
 * Returns 0 or -EMEDIUMTYPE with the reason in ret_error.
 */
int image_format_check(ImageFormat format, const uint8_t *head, size_t len, uint64_t file_size,
                       const char *name, SeatError **ret_error);

/* The disk's virtual size: the qcow2 header's size field, or a raw file's length. Read
 * from a verified blob, so the header has been checked already. */
int image_disk_virtual_size(ImageFormat format, const char *path, uint64_t *ret);
