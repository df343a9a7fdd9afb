/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "copyhash.h"
#include "common/fileio.h"

#define SLOTS 4
#define WORKERS_MAX 8

typedef struct Slot {
        uint8_t *buf;
        size_t len;
        size_t index;
        enum { SLOT_FREE, SLOT_FILLED, SLOT_HASHING } state;
} Slot;

typedef struct Pipeline {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        Slot slots[SLOTS];
        uint8_t (*digests)[SEAT_HASH_BYTES];
        bool done;   /* no more chunks will be filled */
        int error;   /* a worker failed */
} Pipeline;

static void *hash_worker(void *p) {
        Pipeline *pl = p;
        pthread_mutex_lock(&pl->lock);
        for (;;) {
                Slot *s = NULL;
                for (size_t i = 0; i < SLOTS && !s; i++)
                        if (pl->slots[i].state == SLOT_FILLED)
                                s = &pl->slots[i];
                if (!s) {
                        if (pl->done || pl->error)
                                break;
                        pthread_cond_wait(&pl->changed, &pl->lock);
                        continue;
                }
                s->state = SLOT_HASHING;
                pthread_mutex_unlock(&pl->lock);
                int r = blake2b_buffer(s->buf, s->len, pl->digests[s->index]);
                pthread_mutex_lock(&pl->lock);
                if (r < 0)
                        pl->error = EIO;
                s->state = SLOT_FREE;
                pthread_cond_broadcast(&pl->changed);
        }
        pthread_mutex_unlock(&pl->lock);
        return NULL;
}

static Slot *wait_free_slot(Pipeline *pl) {
        pthread_mutex_lock(&pl->lock);
        for (;;) {
                for (size_t i = 0; i < SLOTS; i++)
                        if (pl->slots[i].state == SLOT_FREE) {
                                pthread_mutex_unlock(&pl->lock);
                                return &pl->slots[i];
                        }
                if (pl->error) {
                        pthread_mutex_unlock(&pl->lock);
                        return NULL;
                }
                pthread_cond_wait(&pl->changed, &pl->lock);
        }
}

static void publish(Pipeline *pl, Slot *s) {
        pthread_mutex_lock(&pl->lock);
        s->state = SLOT_FILLED;
        pthread_cond_broadcast(&pl->changed);
        pthread_mutex_unlock(&pl->lock);
}

static void finish(Pipeline *pl, pthread_t *workers, size_t n) {
        pthread_mutex_lock(&pl->lock);
        pl->done = true;
        pthread_cond_broadcast(&pl->changed);
        pthread_mutex_unlock(&pl->lock);
        for (size_t i = 0; i < n; i++)
                pthread_join(workers[i], NULL);
}

/* In-kernel copy of one chunk (no pass through our memory), then the stored bytes are read
 * back from the page cache to be hashed: what is hashed is what the store holds. */
static int copy_chunk_kernel(int src, int dst, Slot *s, uint64_t offset, size_t want, const char *name,
                             bool *ret_unsupported, SeatError **ret_error) {
        loff_t in = (loff_t) offset, out = (loff_t) offset;
        size_t left = want;
        while (left > 0) {
                ssize_t n = copy_file_range(src, &in, dst, &out, left, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && left == want && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP)) {
                        *ret_unsupported = true;
                        return 0;
                }
                if (n < 0)
                        return seat_error_set(ret_error, errno, "copy '%s': %m", name);
                if (n == 0)
                        return seat_error_set(ret_error, EBADMSG, "'%s' ended early: it is shorter than its manifest declares", name);
                left -= (size_t) n;
        }
        size_t got = 0;
        while (got < want) {
                ssize_t n = pread(dst, s->buf + got, want - got, (off_t) (offset + got));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return seat_error_set(ret_error, n < 0 ? errno : EIO, "read back the store copy of '%s'", name);
                got += (size_t) n;
        }
        s->len = want;
        return 0;
}

/* Copy one chunk through our memory: read it whole, write it. */
static int copy_chunk(int src, int dst, Slot *s, uint64_t offset, size_t want, const char *name, SeatError **ret_error) {
        if (lseek(src, (off_t) offset, SEEK_SET) < 0 || lseek(dst, (off_t) offset, SEEK_SET) < 0)
                return seat_error_set(ret_error, errno, "seek in '%s': %m", name);
        ssize_t n = loop_read(src, s->buf, want);
        if (n < 0)
                return seat_error_set(ret_error, (int) -n, "read '%s': %s", name, strerror((int) -n));
        if ((size_t) n != want)
                return seat_error_set(ret_error, EBADMSG, "'%s' ended early: it is shorter than its manifest declares", name);
        s->len = want;
        int r = loop_write(dst, s->buf, want);
        if (r < 0)
                return seat_error_set(ret_error, -r, "write the store copy of '%s': %s", name, strerror(-r));
        return 0;
}

static int copy_chunks(int src, int dst, uint64_t size, size_t chunk_size, size_t n_chunks, const char *name,
                       const StoreCallbacks *cb, Pipeline *pl, uint8_t *head, size_t head_max, size_t *ret_head_len,
                       SeatError **ret_error) {
        uint64_t done = 0;
        bool kernel_copy = true; /* copy_file_range where the filesystems allow it */
        for (size_t i = 0; i < n_chunks; i++) {
                if (cb && cb->cancelled && cb->cancelled(cb->userdata))
                        return seat_error_set(ret_error, ECANCELED, "import of '%s' cancelled", name);
                Slot *s = wait_free_slot(pl);
                if (!s)
                        return seat_error_set(ret_error, pl->error, "hash '%s': %s", name, strerror(pl->error));
                size_t want = (size_t) MIN((uint64_t) chunk_size, size - done);
                bool unsupported = !kernel_copy;
                int r = kernel_copy ? copy_chunk_kernel(src, dst, s, done, want, name, &unsupported, ret_error) : 0;
                if (r >= 0 && unsupported) {
                        kernel_copy = false;
                        r = copy_chunk(src, dst, s, done, want, name, ret_error);
                }
                if (r < 0)
                        return r;
                if (i == 0) {
                        *ret_head_len = MIN(want, head_max);
                        memcpy(head, s->buf, *ret_head_len);
                }
                s->index = i;
                publish(pl, s);
                done += want;
                if (cb && cb->progress)
                        cb->progress(cb->userdata, name, done, size);
        }
        uint8_t extra;
        ssize_t n;
        do
                n = pread(src, &extra, 1, (off_t) size);
        while (n < 0 && errno == EINTR);
        if (n > 0)
                return seat_error_set(ret_error, EFBIG, "'%s' is larger than the %" PRIu64 " bytes its manifest declares", name,
                                      size);
        return 0;
}

int copy_and_hash(int src, int dst, uint64_t size, size_t chunk_size, const char *name, const StoreCallbacks *cb,
                  ChunkDigests *ret, uint8_t *head, size_t head_max, size_t *ret_head_len, SeatError **ret_error) {
        size_t n_chunks = size == 0 ? 0 : (size_t) ((size - 1) / chunk_size + 1);
        Pipeline pl = { .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER };
        pthread_t workers[WORKERS_MAX];
        size_t n_workers = 0;
        int r = 0;

        if (chunk_size == 0 || chunk_size > COPYHASH_CHUNK_MAX)
                return -EINVAL;
        *ret_head_len = 0;
        pl.digests = calloc(n_chunks ? n_chunks : 1, SEAT_HASH_BYTES);
        for (size_t i = 0; i < SLOTS && r >= 0; i++)
                if (!(pl.slots[i].buf = malloc(chunk_size)))
                        r = -ENOMEM;
        if (!pl.digests)
                r = -ENOMEM;
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; r >= 0 && i < MAX(1L, MIN(ncpu, (long) WORKERS_MAX)); i++)
                if (pthread_create(&workers[n_workers], NULL, hash_worker, &pl) == 0)
                        n_workers++;
        if (r >= 0 && n_workers == 0)
                r = -EAGAIN;
        (void) posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);
        if (r >= 0)
                r = copy_chunks(src, dst, size, chunk_size, n_chunks, name, cb, &pl, head, head_max, ret_head_len, ret_error);
        finish(&pl, workers, n_workers);
        if (r >= 0 && pl.error)
                r = seat_error_set(ret_error, pl.error, "hash '%s': %s", name, strerror(pl.error));
        if (r >= 0 && blake2b_buffer(pl.digests, n_chunks * SEAT_HASH_BYTES, ret->identity) < 0)
                r = -EIO;
        for (size_t i = 0; i < SLOTS; i++)
                free(pl.slots[i].buf);
        if (r < 0) {
                free(pl.digests);
                return r == -ENOMEM ? seat_error_set(ret_error, ENOMEM, "out of memory copying '%s'", name) : r;
        }
        ret->chunk_size = chunk_size;
        ret->total_size = size;
        ret->n_chunks = n_chunks;
        ret->chunks = pl.digests;
        return 0;
}
