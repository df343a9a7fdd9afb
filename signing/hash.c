/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/hex.h"
#include "hash.h"

#define READ_BUFFER_SIZE (64U * 1024U)

int signing_init(void) {
        /* 0: initialised now, 1: already was; thread-safe inside libsodium. */
        return sodium_init() < 0 ? -EIO : 0;
}

int blake2b_buffer(const void *data, size_t len, uint8_t out[SEAT_HASH_BYTES]) {
        if (signing_init() < 0)
                return -EIO;
        if (crypto_generichash(out, SEAT_HASH_BYTES, data, len, NULL, 0) != 0)
                return -EIO;
        return 0;
}

/* Hands fd's bytes to fn, a block at a time, until EOF; an error from fn stops the read
 * and is returned. Both hashers of a file read it this way. 0 or -errno. */
static int read_blocks(int fd, int (*fn)(const uint8_t *buf, size_t n, void *userdata), void *userdata) {
        _cleanup_free_ uint8_t *buf = malloc(READ_BUFFER_SIZE);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = loop_read(fd, buf, READ_BUFFER_SIZE);
                if (n < 0)
                        return (int) n;
                if (n == 0)
                        return 0;
                int r = fn(buf, (size_t) n, userdata);
                if (r < 0)
                        return r;
                if ((size_t) n < READ_BUFFER_SIZE)
                        return 0; /* loop_read() only stops short at EOF */
        }
}

typedef struct Blake2bRead {
        crypto_generichash_state st;
        uint64_t total, max_bytes;
} Blake2bRead;

static int blake2b_block(const uint8_t *buf, size_t n, void *userdata) {
        Blake2bRead *b = userdata;
        if ((uint64_t) n > b->max_bytes - b->total)
                return -EFBIG;
        b->total += (uint64_t) n;
        crypto_generichash_update(&b->st, buf, n);
        return 0;
}

int blake2b_fd(int fd, uint64_t max_bytes, uint8_t out[SEAT_HASH_BYTES], uint64_t *ret_size) {
        Blake2bRead b = { .max_bytes = max_bytes };
        int r;

        if (fd < 0)
                return -EBADF;
        if (signing_init() < 0)
                return -EIO;
        crypto_generichash_init(&b.st, NULL, 0, SEAT_HASH_BYTES);
        r = read_blocks(fd, blake2b_block, &b);
        if (r < 0)
                return r;
        crypto_generichash_final(&b.st, out, SEAT_HASH_BYTES);
        if (ret_size)
                *ret_size = b.total;
        return 0;
}

struct ChunkHasher {
        crypto_generichash_state chunk; /* 64-byte aligned: the struct is allocated aligned */
        crypto_generichash_state identity;
        size_t chunk_size;
        size_t in_chunk;                /* bytes in the current chunk */
        uint64_t total;
        uint64_t max_bytes;
        uint8_t (*digests)[SEAT_HASH_BYTES];
        size_t n_digests;
        size_t n_allocated;
        bool spent;
};

int chunk_hasher_new(size_t chunk_size, uint64_t max_bytes, ChunkHasher **ret) {
        void *p = NULL;

        if (chunk_size == 0 || chunk_size > SEAT_CHUNK_SIZE_MAX || !ret)
                return -EINVAL;
        if (signing_init() < 0)
                return -EIO;
        if (posix_memalign(&p, 64, sizeof(ChunkHasher)) != 0)
                return -ENOMEM;

        ChunkHasher *h = p;
        memset(h, 0, sizeof(*h));
        h->chunk_size = chunk_size;
        h->max_bytes = max_bytes;
        crypto_generichash_init(&h->chunk, NULL, 0, SEAT_HASH_BYTES);
        crypto_generichash_init(&h->identity, NULL, 0, SEAT_HASH_BYTES);
        *ret = h;
        return 0;
}

ChunkHasher *chunk_hasher_free(ChunkHasher *h) {
        if (!h)
                return NULL;
        free(h->digests);
        return mfree(h);
}

static int chunk_hasher_close_chunk(ChunkHasher *h) {
        if (h->n_digests == h->n_allocated) {
                size_t n = h->n_allocated ? h->n_allocated * 2 : 16;
                void *p = reallocarray(h->digests, n, SEAT_HASH_BYTES);
                if (!p)
                        return -ENOMEM;
                h->digests = p;
                h->n_allocated = n;
        }
        uint8_t *d = h->digests[h->n_digests];
        crypto_generichash_final(&h->chunk, d, SEAT_HASH_BYTES);
        crypto_generichash_update(&h->identity, d, SEAT_HASH_BYTES);
        h->n_digests++;
        h->in_chunk = 0;
        crypto_generichash_init(&h->chunk, NULL, 0, SEAT_HASH_BYTES);
        return 0;
}

int chunk_hasher_update(ChunkHasher *h, const void *buf, size_t len) {
        const uint8_t *p = buf;

        if (!h || (!buf && len > 0))
                return -EINVAL;
        if (h->spent)
                return -ESTALE;
        if ((uint64_t) len > h->max_bytes - h->total)
                return -EFBIG;

        while (len > 0) {
                size_t take = MIN(len, h->chunk_size - h->in_chunk);
                crypto_generichash_update(&h->chunk, p, take);
                h->in_chunk += take;
                h->total += take;
                p += take;
                len -= take;
                if (h->in_chunk == h->chunk_size) {
                        int r = chunk_hasher_close_chunk(h);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int chunk_hasher_finish(ChunkHasher *h, ChunkDigests *ret) {
        int r;

        if (!h || !ret)
                return -EINVAL;
        if (h->spent)
                return -ESTALE;
        if (h->in_chunk > 0) {
                r = chunk_hasher_close_chunk(h);
                if (r < 0)
                        return r;
        }
        h->spent = true;
        *ret = (ChunkDigests) {
                .chunk_size = h->chunk_size,
                .total_size = h->total,
                .n_chunks = h->n_digests,
                .chunks = TAKE_PTR(h->digests),
        };
        crypto_generichash_final(&h->identity, ret->identity, SEAT_HASH_BYTES);
        h->n_digests = h->n_allocated = 0;
        return 0;
}

void chunk_digests_done(ChunkDigests *d) {
        if (!d)
                return;
        free(d->chunks);
        *d = (ChunkDigests) {};
}

static int chunk_hasher_block(const uint8_t *buf, size_t n, void *userdata) {
        return chunk_hasher_update(userdata, buf, n);
}

int chunk_hash_fd(int fd, size_t chunk_size, uint64_t max_bytes, ChunkDigests *ret) {
        _cleanup_(chunk_hasher_freep) ChunkHasher *h = NULL;
        int r;

        if (fd < 0)
                return -EBADF;
        r = chunk_hasher_new(chunk_size, max_bytes, &h);
        if (r < 0)
                return r;
        r = read_blocks(fd, chunk_hasher_block, h);
        if (r < 0)
                return r;
        return chunk_hasher_finish(h, ret);
}

int digest_to_hex(const uint8_t *digest, size_t len, char *out, size_t out_size) {
        static const char table[] = "0123456789abcdef";

        if (!digest || !out || len > (SIZE_MAX - 1) / 2)
                return -EINVAL;
        if (out_size < 2 * len + 1)
                return -ENOBUFS;
        for (size_t i = 0; i < len; i++) {
                out[2 * i] = table[digest[i] >> 4];
                out[2 * i + 1] = table[digest[i] & 15];
        }
        out[2 * len] = '\0';
        return 0;
}

int digest_from_hex(const char *hex, size_t hex_len, uint8_t *out, size_t out_len) {
        if (!hex || !out || out_len > SIZE_MAX / 2 || hex_len != 2 * out_len)
                return -EINVAL;
        for (size_t i = 0; i < out_len; i++) {
                int hi = hex_digit_value(hex[2 * i]), lo = hex_digit_value(hex[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                out[i] = (uint8_t) (hi << 4 | lo);
        }
        return 0;
}
