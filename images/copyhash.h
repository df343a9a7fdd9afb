/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Copy a file into the store while its chunks are hashed on worker threads: one read of
 * the bytes, the hashing hidden behind the copy. What is hashed is exactly what was
 * written (the same buffer), never a second read of the caller's file. */

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "signing/hash.h"
#include "store.h"

#define COPYHASH_CHUNK_MAX (16u * 1024u * 1024u) /* larger chunks: the caller hashes inline */

/* Reads exactly size bytes from src (more is -EFBIG, fewer -EBADMSG), writes them to dst,
 * and returns the chunk digests and identity in ret. The first head_max bytes are copied
 * into head (*ret_head_len of them). */
int copy_and_hash(int src, int dst, uint64_t size, size_t chunk_size, const char *name, const StoreCallbacks *cb,
                  ChunkDigests *ret, uint8_t *head, size_t head_max, size_t *ret_head_len, SeatError **ret_error);
