/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* archive-seal.c: sealing: members planned, tar-streamed, encrypted in chunks and written by a writer thread. */
#include "archive-internal.h"

/* ---- sealing -------------------------------------------------------------------- */

#define SLOT_SIZE (4U + CT_CHUNK_MAX)
#define WRITEBACK_WINDOW (8ULL << 20)

int write_failed(const Sealer *s, int r, SeatError **ret_error) {
        if (r == -ENOSPC || r == -EDQUOT)
                return seat_error_set(ret_error, ENOSPC,
                                      "disk full while sealing '%s': nothing was kept, free space and seal again",
                                      s->path);
        return seat_error_set(ret_error, -r, "cannot write archive '%s': %s", s->path, strerror(-r));
}

/* Before the ring runs: the sealed key and the stream header. */
int sealer_write(Sealer *s, const void *buf, size_t len, SeatError **ret_error) {
        int r = loop_write(s->fd, buf, len);
        if (r < 0)
                return write_failed(s, r, ret_error);
        crypto_generichash_update(&s->payload_hash, buf, len);
        s->written += len;
        return 0;
}

static void *writer_thread(void *p) {
        Writer *w = p;
        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (w->count == 0 && !w->done)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (w->count == 0)
                        break;
                unsigned i = w->tail;
                size_t len = w->len[i];
                pthread_mutex_unlock(&w->lock);
                uint8_t *buf = w->slots + (size_t) i * SLOT_SIZE;
                int r = 0;
                if (w->error == 0) { /* only this thread sets it */
                        crypto_generichash_update(w->payload_hash, buf, len);
                        r = loop_write(w->fd, buf, len);
                        *w->written += len;
                        /* Start the disk writing now, a window at a time, so the fsync at
                         * the end finds little left to do. */
                        if (r >= 0 && *w->written - w->synced >= WRITEBACK_WINDOW) {
                                (void) sync_file_range(w->fd, (off_t) w->synced, (off_t) (*w->written - w->synced),
                                                       SYNC_FILE_RANGE_WRITE);
                                w->synced = *w->written;
                        }
                }
                pthread_mutex_lock(&w->lock);
                if (r < 0)
                        w->error = r;
                w->tail = (w->tail + 1) % RING_SLOTS;
                w->count--;
                pthread_cond_broadcast(&w->cond);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

int writer_start(Sealer *s) {
        Writer *w = &s->w;
        w->slots = malloc((size_t) RING_SLOTS * SLOT_SIZE);
        if (!w->slots)
                return -ENOMEM;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        w->fd = s->fd;
        w->payload_hash = &s->payload_hash;
        w->written = &s->written;
        int r = -pthread_create(&w->thread, NULL, writer_thread, w);
        w->running = r == 0;
        return r;
}

/* Waits for every slot to be written; returns the first write failure. Safe to call twice. */
int writer_stop(Writer *w) {
        if (w->running) {
                pthread_mutex_lock(&w->lock);
                w->done = true;
                pthread_cond_broadcast(&w->cond);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
                w->running = false;
                pthread_cond_destroy(&w->cond);
                pthread_mutex_destroy(&w->lock);
        }
        free(w->slots);
        w->slots = NULL;
        return w->error;
}

int sealer_flush(Sealer *s, SeatError **ret_error) {
        Writer *w = &s->w;
        unsigned long long clen = 0;
        if (s->chunks_left == 0)
                return seat_error_set(ret_error, EIO, "sealing '%s': more data than planned (a file grew?)", s->path);
        bool last = s->chunks_left == 1;
        uint8_t tag = last ? crypto_secretstream_xchacha20poly1305_TAG_FINAL
                           : crypto_secretstream_xchacha20poly1305_TAG_MESSAGE;
        pthread_mutex_lock(&w->lock);
        while (w->count == RING_SLOTS && w->error == 0)
                pthread_cond_wait(&w->cond, &w->lock);
        int err = w->error;
        unsigned i = w->head;
        pthread_mutex_unlock(&w->lock);
        if (err < 0)
                return write_failed(s, err, ret_error);
        uint8_t *out = w->slots + (size_t) i * SLOT_SIZE;
        if (crypto_secretstream_xchacha20poly1305_push(s->ss, out + 4, &clen, s->plain, s->plain_len, NULL, 0, tag) != 0)
                return seat_error_set(ret_error, EIO, "encryption failed");
        put_le32(out, (uint32_t) clen);
        s->plain_len = 0;
        s->chunks_left--;
        pthread_mutex_lock(&w->lock);
        w->len[i] = 4 + (size_t) clen;
        w->head = (w->head + 1) % RING_SLOTS;
        w->count++;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        return 0;
}

/* Room in the chunk buffer; a full chunk goes out first (lazily: the last one, written
 * by finish, carries the FINAL tag). */
static int sealer_room(Sealer *s, uint8_t **ret, size_t *ret_room, SeatError **ret_error) {
        if (s->plain_len == ARCHIVE_CHUNK_SIZE) {
                int r = sealer_flush(s, ret_error);
                if (r < 0)
                        return r;
        }
        *ret = s->plain + s->plain_len;
        *ret_room = ARCHIVE_CHUNK_SIZE - s->plain_len;
        return 0;
}

/* Feed tar bytes; full chunks go out except the last one, which finish() writes. */
int sealer_feed(Sealer *s, const uint8_t *p, size_t len, SeatError **ret_error) {
        while (len > 0) {
                uint8_t *dst;
                size_t room;
                int r = sealer_room(s, &dst, &room, ret_error);
                if (r < 0)
                        return r;
                size_t n = MIN(len, room);
                memcpy(dst, p, n);
                s->plain_len += n;
                p += n;
                len -= n;
        }
        return 0;
}

int seal_member(Sealer *s, ArchiveMember *a, int in_fd, int64_t mtime_s, SeatError **ret_error) {
        uint8_t block[TAR_BLOCK];
        crypto_generichash_state h;
        uint64_t left = a->size;
        int r;

        tar_header(a, mtime_s, block);
        r = sealer_feed(s, block, TAR_BLOCK, ret_error);
        if (r < 0)
                return r;
        (void) posix_fadvise(in_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        crypto_generichash_init(&h, NULL, 0, 64);
        while (left > 0) {
                uint8_t *dst;
                size_t room;
                r = sealer_room(s, &dst, &room, ret_error);
                if (r < 0)
                        return r;
                ssize_t n = loop_read(in_fd, dst, (size_t) MIN(left, (uint64_t) room));
                if (n < 0)
                        return seat_error_set(ret_error, (int) -n, "cannot read '%s': %s", a->origin,
                                              strerror((int) -n));
                if (n == 0)
                        return seat_error_set(ret_error, EIO, "'%s' shrank while it was sealed: seal again",
                                              a->origin);
                crypto_generichash_update(&h, dst, (size_t) n);
                s->plain_len += (size_t) n;
                left -= (uint64_t) n;
        }
        crypto_generichash_final(&h, a->digest, 64);
        memset(block, 0, sizeof(block));
        size_t pad = (size_t) (tar_padded(a->size) - a->size);
        return pad > 0 ? sealer_feed(s, block, pad, ret_error) : 0;
}

static void seal_inputs_done(SealInputs *in) {
        for (size_t i = 0; in->fds && i < in->n; i++)
                safe_close(in->fds[i]);
        free(in->fds);
}

static int open_input(const ArchiveInput *in, uint64_t cap, ArchiveMember *a, int *ret_fd, SeatError **ret_error) {
        struct stat st;
        _cleanup_close_ int fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
        if (fd < 0 && errno == ELOOP)
                return seat_error_set(ret_error, ELOOP, "input '%s' is a symlink: refused (not followed)", in->path);
        if (fd < 0) {
                int r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot open input '%s': %s", in->path, strerror(-r));
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return seat_error_set(ret_error, EBADFD, "input '%s' is not a regular file: refused", in->path);
        if (in->original_size != 0 && in->original_size < (uint64_t) st.st_size)
                return seat_error_set(ret_error, EINVAL, "input '%s' is larger than the size it was cut from", in->path);
        a->original_size = in->original_size ? in->original_size : (uint64_t) st.st_size;
        a->size = MIN((uint64_t) st.st_size, cap);
        a->truncated = a->original_size > a->size;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int plan_members(const ArchiveSealParams *p, ArchiveManifest *m, SealInputs *in, SeatError **ret_error) {
        uint64_t cap = p->max_member_size ? MIN(p->max_member_size, ARCHIVE_MEMBER_HARD_MAX)
                                          : ARCHIVE_MEMBER_MAX_DEFAULT;
        size_t audits = 0;

        m->members = calloc(p->n_inputs, sizeof(ArchiveMember));
        in->fds = malloc(p->n_inputs * sizeof(int));
        if (!m->members || !in->fds)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        for (size_t i = 0; i < p->n_inputs; i++) {
                const ArchiveInput *src = p->inputs + i;
                ArchiveMember *a = m->members + i;
                if (!src->name || !src->path || !src->role || !role_valid(src->role))
                        return seat_error_set(ret_error, EINVAL, "input %zu: name, path and a role (audit, console, "
                                              "capture, file, symlink) are needed", i + 1);
                audits += strcmp(src->role, "audit") == 0;
                snprintf(a->path, sizeof(a->path), "members/%04u", (unsigned) (i + 1));
                sanitise_name(i, src->name, a->name);
                origin_text(src->name, a->origin);
                strcpy(a->role, src->role);
                int r = open_input(src, cap, a, in->fds + i, ret_error);
                if (r < 0)
                        return r;
                in->n = ++m->n_members;
                m->stream_size += TAR_BLOCK + tar_padded(a->size);
        }
        if (audits > 1)
                return seat_error_set(ret_error, EINVAL, "more than one audit log given");
        if (audits == 1 && !p->audit_key && !p->audit_key_sealed)
                return seat_error_set(ret_error, EINVAL, "an audit log needs its initial key (raw or sealed)");
        m->stream_size += 2 * TAR_BLOCK;
        m->chunk_size = ARCHIVE_CHUNK_SIZE;
        m->chunks = chunks_for(m->stream_size);
        m->payload_size = payload_size_for(m->stream_size);
        return 0;
}

static int seal_params_check(const ArchiveSealParams *p, SeatError **ret_error) {
        if (!p || !p->host_key || !p->facilitator || !p->inputs)
                return seat_error_set(ret_error, EINVAL, "sealing needs a host key, a facilitator key and inputs");
        if (p->n_inputs == 0 || p->n_inputs > ARCHIVE_MEMBERS_MAX)
                return seat_error_set(ret_error, EINVAL, "an archive holds 1-%u files, not %zu", ARCHIVE_MEMBERS_MAX,
                                      p->n_inputs);
        if (!seat_id_valid(p->seat_id))
                return seat_error_set(ret_error, EINVAL, "seat id '%s' is invalid: 1-64 of [A-Za-z0-9._-]",
                                      p->seat_id ? p->seat_id : "");
        if (p->session && !session_valid(p->session))
                return seat_error_set(ret_error, EINVAL, "session '%s' is invalid: 32-64 lower-case hex digits",
                                      p->session);
        if (p->image_digest && !image_ok(p->image_digest))
                return seat_error_set(ret_error, EINVAL, "image digest is invalid: printable, at most %u chars",
                                      ARCHIVE_IMAGE_MAX);
        if (p->audit_key && p->audit_key_sealed)
                return seat_error_set(ret_error, EINVAL, "give the audit key raw or sealed, not both");
        return 0;
}

static int temp_path_for(const char *path, char **ret) {
        _cleanup_free_ char *d = strdup(path), *b = strdup(path);
        uint8_t rnd[6];
        char hex[13];
        if (!d || !b)
                return -ENOMEM;
        randombytes_buf(rnd, sizeof(rnd));
        (void) digest_to_hex(rnd, sizeof(rnd), hex, sizeof(hex));
        return asprintf(ret, "%s/.%s.tmp-%s", dirname(d), basename(b), hex) < 0 ? -ENOMEM : 0;
}

static int seal_to_fd(int fd, const char *path, const ArchiveSealParams *p, SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = calloc(1, sizeof(ArchiveManifest));
        _cleanup_(seal_inputs_done) SealInputs in = {};
        _cleanup_free_ uint8_t *head = NULL, *head2 = NULL, *plain = NULL;
        _cleanup_sodium_ crypto_secretstream_xchacha20poly1305_state *ss = NULL;
        size_t head_len = 0, head2_len = 0;
        int r;

        if (!m)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        strcpy(m->seat, p->seat_id);
        if (p->session)
                strcpy(m->session, p->session);
        else {
                uint8_t nonce[16];
                randombytes_buf(nonce, sizeof(nonce));
                (void) digest_to_hex(nonce, sizeof(nonce), m->session, sizeof(m->session));
        }
        if (p->image_digest)
                strcpy(m->image, p->image_digest);
        m->created_ms = p->created_ms > 0 ? p->created_ms : now_realtime_ms();
        memcpy(m->facilitator_key_id, p->facilitator->key_id, SEAT_BOX_KEY_ID_BYTES);
        if (p->audit_key_sealed) {
                memcpy(m->audit_key_sealed, p->audit_key_sealed, ARCHIVE_SEALED_AUDIT_KEY_BYTES);
                m->has_audit_key = true;
        } else if (p->audit_key) {
                if (archive_seal_audit_key(p->facilitator, p->audit_key, m->audit_key_sealed) < 0)
                        return seat_error_set(ret_error, EIO, "cannot seal the audit key");
                m->has_audit_key = true;
        }
        if (p->collection) {
                m->collection = *p->collection;
                m->has_collection = true;
        }
        r = plan_members(p, m, &in, ret_error);
        if (r < 0)
                return r;
        if (p->capture) {
                m->capture = *p->capture;
                m->capture.files = m->capture.bytes = 0;
                for (size_t i = 0; i < m->n_members; i++)
                        if (!strcmp(m->members[i].role, "capture")) {
                                m->capture.files++;
                                m->capture.bytes += m->members[i].size;
                        }
                m->capture.complete = archive_capture_is_complete(&m->capture);
                m->has_capture = true;
        }

        /* The head's length does not depend on the digests (fixed-width hex): sign a
         * placeholder to learn it, write the payload after it, then the real head. */
        r = build_head(m, p->host_key, &head, &head_len, ret_error);
        if (r < 0)
                return r;
        if (lseek(fd, (off_t) head_len, SEEK_SET) < 0)
                return seat_error_set(ret_error, errno, "cannot seek in '%s': %m", path);

        ss = sodium_malloc(sizeof(*ss));
        plain = malloc(ARCHIVE_CHUNK_SIZE);
        if (!ss || !plain)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        Sealer s = { .fd = fd, .path = path, .ss = ss, .plain = plain, .chunks_left = m->chunks };
        crypto_generichash_init(&s.payload_hash, NULL, 0, 64);
        r = seal_payload(&s, m, p->facilitator, &in, ret_error);
        if (r < 0)
                return r;

        r = build_head(m, p->host_key, &head2, &head2_len, ret_error);
        if (r < 0)
                return r;
        if (head2_len != head_len)
                return seat_error_set(ret_error, EIO, "sealing '%s': the manifest changed length", path);
        ssize_t n = pwrite(fd, head2, head2_len, 0);
        if (n < 0 && (errno == ENOSPC || errno == EDQUOT))
                return seat_error_set(ret_error, ENOSPC, "disk full while sealing '%s': nothing was kept", path);
        if (n != (ssize_t) head2_len)
                return seat_error_set(ret_error, n < 0 ? errno : EIO, "cannot write the head of '%s'", path);
        if (fsync(fd) < 0)
                return seat_error_set(ret_error, errno == EDQUOT ? ENOSPC : errno, "cannot fsync '%s': %m", path);
        return 0;
}

int archive_seal(const char *path, const ArchiveSealParams *p, SeatError **ret_error) {
        _cleanup_free_ char *tmp = NULL;
        struct stat st;
        int r;

        r = seal_params_check(p, ret_error);
        if (r < 0)
                return r;
        if (!path)
                return seat_error_set(ret_error, EINVAL, "no archive path");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        if (lstat(path, &st) == 0)
                return seat_error_set(ret_error, EEXIST, "archive '%s' already exists: not overwritten", path);
        if (temp_path_for(path, &tmp) < 0)
                return seat_error_set(ret_error, ENOMEM, "out of memory");

        _cleanup_close_ int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0) {
                r = negative_errno();
                if (r == -ENOSPC || r == -EDQUOT)
                        return seat_error_set(ret_error, ENOSPC, "disk full while sealing '%s'", path);
                return seat_error_set(ret_error, -r, "cannot create '%s': %s", tmp, strerror(-r));
        }
        r = seal_to_fd(fd, path, p, ret_error);
        if (r >= 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
                r = negative_errno();
                seat_error_set(ret_error, -r, "cannot rename '%s' to '%s': %s", tmp, path, strerror(-r));
        }
        if (r < 0) {
                (void) unlink(tmp);
                return r;
        }
        r = fsync_parent_dir(path);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot fsync the directory of '%s': %s", path, strerror(-r));
        return 0;
}
