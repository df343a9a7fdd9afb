/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * BLAKE2b-512 (libsodium crypto_generichash, no key) over buffers, fds and chunked streams.
 *
 * What a caller may touch: everything declared here. ChunkHasher is opaque; ChunkDigests
 * is plain data the caller owns after chunk_hasher_finish() and releases with
 * chunk_digests_done().
 *
 * Chunked hashing: a stream is cut into chunks of exactly chunk_size bytes (the last one
 * may be shorter, and an empty stream has no chunk at all). Each chunk gets its own
 * BLAKE2b-512 digest; the stream's *identity* is BLAKE2b-512 over the concatenation of
 * the chunk digests in order (so the identity of an empty stream is BLAKE2b-512("")).
 * The identity depends on the bytes and on chunk_size only, never on how the caller
 * split its update() calls, so a file can be copied and hashed in one pass.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"

#define SEAT_HASH_BYTES 64U                        /* BLAKE2b-512 */
#define SEAT_HASH_HEX_LEN (2U * SEAT_HASH_BYTES)   /* without the NUL */
#define SEAT_CHUNK_SIZE_DEFAULT (4U * 1024U * 1024U)
#define SEAT_CHUNK_SIZE_MAX (1U << 30)

/* Always succeeds once libsodium is initialised; returns 0 or -EIO. */
int blake2b_buffer(const void *data, size_t len, uint8_t out[SEAT_HASH_BYTES]);

/*
 * Hash everything readable from fd (from its current offset to EOF). Refuses with
 * -EFBIG, without a digest, once more than max_bytes were read. ret_size (may be NULL)
 * gets the number of bytes hashed. Returns 0 or -errno.
 */
int blake2b_fd(int fd, uint64_t max_bytes, uint8_t out[SEAT_HASH_BYTES], uint64_t *ret_size);

typedef struct ChunkDigests {
        size_t chunk_size;
        uint64_t total_size;             /* bytes hashed */
        size_t n_chunks;
        uint8_t (*chunks)[SEAT_HASH_BYTES]; /* n_chunks digests, malloc'd; NULL if none */
        uint8_t identity[SEAT_HASH_BYTES];
} ChunkDigests;

/* Frees the chunk list and zeroes the struct; safe on a zeroed or already-done struct. */
void chunk_digests_done(ChunkDigests *d);

typedef struct ChunkHasher ChunkHasher;

/*
 * chunk_size in 1..SEAT_CHUNK_SIZE_MAX. max_bytes caps the stream (and so the digest
 * list): update() past it fails with -EFBIG and consumes nothing.
 * Returns 0, -EINVAL or -ENOMEM.
 */
int chunk_hasher_new(size_t chunk_size, uint64_t max_bytes, ChunkHasher **ret);
int chunk_hasher_update(ChunkHasher *h, const void *buf, size_t len);
/* Completes the last chunk and the identity. The hasher is spent afterwards: further
 * update()/finish() calls return -ESTALE. */
int chunk_hasher_finish(ChunkHasher *h, ChunkDigests *ret);
ChunkHasher *chunk_hasher_free(ChunkHasher *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(ChunkHasher *, chunk_hasher_free)

/* Chunk-hash fd to EOF (at most max_bytes, -EFBIG beyond). */
int chunk_hash_fd(int fd, size_t chunk_size, uint64_t max_bytes, ChunkDigests *ret);

/* Lower-case hex. digest_to_hex writes 2*len chars plus a NUL into out (out_size bytes,
 * -ENOBUFS if too small). digest_from_hex wants exactly 2*out_len hex digits (either
 * case) and returns -EINVAL otherwise, leaving out unspecified. */
int digest_to_hex(const uint8_t *digest, size_t len, char *out, size_t out_size);
int digest_from_hex(const char *hex, size_t hex_len, uint8_t *out, size_t out_len);

/* Calls sodium_init() once; 0 or -EIO. Every entry point of this library calls it. */
int signing_init(void);
