/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* archive-open.c: reading: the head verified, the payload walked, and members opened into a directory. */
#include "archive-internal.h"

/* ---- reading -------------------------------------------------------------------- */

/* 0, -EPIPE when the source ends first, -errno. */
int src_read(Source *s, void *dst, size_t n) {
        if (s->fd < 0) {
                if (s->len - s->pos < n)
                        return -EPIPE;
                memcpy(dst, s->buf + s->pos, n);
                s->pos += n;
                return 0;
        }
        ssize_t k = loop_read(s->fd, dst, n);
        if (k < 0)
                return (int) k;
        return (size_t) k == n ? 0 : -EPIPE;
}

static int src_at_end(Source *s) {
        uint8_t b;
        if (s->fd < 0)
                return s->pos == s->len;
        ssize_t k = loop_read(s->fd, &b, 1);
        return k < 0 ? (int) k : k == 0;
}

int read_fail(SeatError **ret_error, int r, const char *what) {
        if (r == -EPIPE)
                return seat_error_set(ret_error, EPIPE, "the archive is truncated (in %s)", what);
        return seat_error_set(ret_error, -r, "cannot read the archive (%s): %s", what, strerror(-r));
}

/* Magic, manifest, signature; the manifest parsed and (with host) its signature checked. */
int read_head(Source *s, const SeatPublicKey *host, ArchiveManifest **ret, SeatError **ret_error) {
        _cleanup_free_ uint8_t *json = NULL, *sig = NULL;
        _cleanup_free_ char *tc = NULL, *want_tc = NULL;
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        uint32_t jlen = 0, slen = 0;
        char magic[ARCHIVE_MAGIC_LEN];
        int r;

        r = src_read(s, magic, sizeof(magic));
        if (r < 0)
                return read_fail(ret_error, r, "magic");
        if (memcmp(magic, ARCHIVE_MAGIC, ARCHIVE_MAGIC_LEN) != 0)
                return seat_error_set(ret_error, EBADMSG, "not a seatd evidence archive (no '" ARCHIVE_MAGIC "' magic)");
        r = read_block(s, 2, ARCHIVE_MANIFEST_MAX, "manifest", &json, &jlen, ret_error);
        if (r < 0)
                return r;
        r = read_block(s, 1, SEAT_SIG_FILE_MAX, "signature", &sig, &slen, ret_error);
        if (r < 0)
                return r;
        if (host) {
                r = seat_verify_buffer(host, json, jlen, (const char *) sig, slen, SEAT_VERIFY_REQUIRE_PREHASHED, &tc,
                                       ret_error);
                if (r < 0)
                        return seat_error_wrap(ret_error, "the manifest's signature by the host key");
        }
        r = archive_manifest_parse((const char *) json, jlen, &m, ret_error);
        if (r < 0)
                return r;
        if (host) {
                want_tc = trusted_comment(m->seat, m->session);
                if (!want_tc)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                if (strcmp(tc, want_tc) != 0)
                        return seat_error_set(ret_error, EKEYREJECTED,
                                              "the signature's trusted comment does not name the manifest's seat and session");
        }
        *ret = TAKE_PTR(m);
        return 0;
}

int archive_check_expected(const ArchiveManifest *m, const char *seat, const char *session, SeatError **ret_error) {
        if (seat && strcmp(seat, m->seat) != 0)
                return seat_error_set(ret_error, EXDEV,
                                      "the archive is from seat '%s', not '%s': refused", m->seat, seat);
        if (session && strcmp(session, m->session) != 0)
                return seat_error_set(ret_error, EXDEV,
                                      "the archive is from session '%s', not '%s': refused", m->session, session);
        return 0;
}
/* ---- payload walk (verify and open) ------------------------------------------------- */

int walk_payload(Source *s, const ArchiveManifest *m, Opener *op, SeatError **ret_error) {
        crypto_generichash_state h;
        uint8_t le[4], sealed[ARCHIVE_SEALED_KEY_BYTES], header[SS_HEADER], digest[64];
        _cleanup_free_ uint8_t *ct = malloc(CT_CHUNK_MAX);
        uint64_t total = 0;
        int r;

        if (!ct)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        crypto_generichash_init(&h, NULL, 0, 64);
        r = src_read(s, le, 4);
        if (r >= 0 && get_le32(le) != ARCHIVE_SEALED_KEY_BYTES)
                return seat_error_set(ret_error, EBADMSG, "the sealed stream key's length is not %u",
                                      ARCHIVE_SEALED_KEY_BYTES);
        if (r >= 0)
                r = src_read(s, sealed, sizeof(sealed));
        if (r < 0)
                return read_fail(ret_error, r, "sealed key");
        r = src_read(s, header, sizeof(header));
        if (r < 0)
                return read_fail(ret_error, r, "stream header");
        crypto_generichash_update(&h, le, 4);
        crypto_generichash_update(&h, sealed, sizeof(sealed));
        crypto_generichash_update(&h, header, sizeof(header));
        total = 4 + sizeof(sealed) + sizeof(header);

        if (op) {
                _cleanup_sodium_ uint8_t *key = sodium_malloc(crypto_secretstream_xchacha20poly1305_KEYBYTES);
                if (!key)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                if (seat_box_seal_open(op->fac, sealed, sizeof(sealed), key) < 0)
                        return seat_error_set(ret_error, EKEYREJECTED,
                                              "the stream key does not open with this facilitator key");
                if (crypto_secretstream_xchacha20poly1305_init_pull(op->ss, header, key) != 0)
                        return seat_error_set(ret_error, EBADMSG, "the stream header is invalid");
        }

        for (uint64_t k = 0; k < m->chunks; k++) {
                bool last = k + 1 == m->chunks;
                uint64_t want = last ? m->stream_size - (m->chunks - 1) * ARCHIVE_CHUNK_SIZE + SS_ABYTES : CT_CHUNK_MAX;
                r = src_read(s, le, 4);
                if (r < 0)
                        return read_fail(ret_error, r, "chunk length");
                uint32_t n = get_le32(le);
                if (n != want)
                        return seat_error_set(ret_error, EBADMSG,
                                              "chunk %" PRIu64 " of %" PRIu64 " is %" PRIu32 " bytes, %" PRIu64
                                              " expected", k + 1, m->chunks, n, want);
                r = src_read(s, ct, n);
                if (r < 0)
                        return read_fail(ret_error, r, "ciphertext");
                crypto_generichash_update(&h, le, 4);
                crypto_generichash_update(&h, ct, n);
                total += 4 + n;
                if (!op)
                        continue;
                unsigned long long plen = 0;
                uint8_t tag = 0;
                if (crypto_secretstream_xchacha20poly1305_pull(op->ss, op->plain, &plen, &tag, ct, n, NULL, 0) != 0)
                        return seat_error_set(ret_error, EKEYREJECTED, "chunk %" PRIu64 " does not decrypt (tampered)",
                                              k + 1);
                if ((tag == crypto_secretstream_xchacha20poly1305_TAG_FINAL) != last)
                        return seat_error_set(ret_error, EPIPE, "chunk %" PRIu64 " of %" PRIu64 ": %s", k + 1,
                                              m->chunks, last ? "no FINAL tag: truncated" : "FINAL tag too early");
                r = tar_feed(op->tar, op->plain, (size_t) plen, ret_error);
                if (r < 0)
                        return r;
        }
        r = src_at_end(s);
        if (r < 0)
                return read_fail(ret_error, r, "end");
        if (r == 0)
                return seat_error_set(ret_error, EBADMSG, "bytes after the last chunk");
        crypto_generichash_final(&h, digest, sizeof(digest));
        if (total != m->payload_size || sodium_memcmp(digest, m->payload_digest, sizeof(digest)) != 0)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "the payload's BLAKE2b-512 does not match the signed manifest: the encrypted "
                                      "content was altered or replaced");
        return 0;
}

int open_archive_fd(const char *path, SeatError **ret_error) {
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        struct stat st;
        if (fd < 0) {
                int r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot open archive '%s': %s", path, strerror(-r));
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                safe_close(fd);
                return seat_error_set(ret_error, EBADFD, "archive '%s' is not a regular file", path);
        }
        return fd;
}
/* ---- open ------------------------------------------------------------------------ */

void partials_done(Partials *p) {
        for (size_t i = 0; p->fds && i < p->n; i++) {
                char name[32];
                safe_close(p->fds[i]);
                if (!p->keep) {
                        snprintf(name, sizeof(name), PARTIAL_FMT, (unsigned) (i + 1));
                        (void) unlinkat(p->dfd, name, 0);
                }
        }
        free(p->fds);
        safe_close(p->dfd);
}

int open_out_dir(const char *out_dir, SeatError **ret_error) {
        if (mkdir(out_dir, 0700) < 0 && errno != EEXIST) {
                int r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot create '%s': %s", out_dir, strerror(-r));
        }
        int dfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0) {
                int r = negative_errno();
                return seat_error_set(ret_error, -r, "cannot open directory '%s'%s: %s", out_dir,
                                      r == -ELOOP || r == -ENOTDIR ? " (a symlink or not a directory)" : "",
                                      strerror(-r));
        }
        return dfd;
}

int partials_create(Partials *p, const ArchiveManifest *m, SeatError **ret_error) {
        struct stat st;
        p->fds = malloc(m->n_members * sizeof(int));
        if (!p->fds)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        for (size_t i = 0; i < m->n_members; i++) {
                char name[32];
                if (fstatat(p->dfd, m->members[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        return seat_error_set(ret_error, EEXIST, "'%s' already exists in the output directory: refused",
                                              m->members[i].name);
                snprintf(name, sizeof(name), PARTIAL_FMT, (unsigned) (i + 1));
                int fd = openat(p->dfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
                if (fd < 0) {
                        int r = negative_errno();
                        return seat_error_set(ret_error, -r, "cannot create '%s' in the output directory: %s", name,
                                              strerror(-r));
                }
                p->fds[p->n++] = fd;
        }
        return 0;
}

int partials_commit(Partials *p, const ArchiveManifest *m, SeatError **ret_error) {
        for (size_t i = 0; i < m->n_members; i++)
                if (fsync(p->fds[i]) < 0)
                        return seat_error_set(ret_error, errno, "cannot fsync member %zu: %m", i + 1);
        for (size_t i = 0; i < m->n_members; i++) {
                char name[32];
                snprintf(name, sizeof(name), PARTIAL_FMT, (unsigned) (i + 1));
                if (renameat2(p->dfd, name, p->dfd, m->members[i].name, RENAME_NOREPLACE) < 0) {
                        int r = negative_errno();
                        /* undo the ones already moved: nothing half-opened stays */
                        for (size_t j = 0; j < i; j++)
                                (void) unlinkat(p->dfd, m->members[j].name, 0);
                        return seat_error_set(ret_error, -r, "cannot move '%s' into place: %s", m->members[i].name,
                                              strerror(-r));
                }
        }
        p->keep = true;
        return fsync(p->dfd) < 0 ? seat_error_set(ret_error, errno, "cannot fsync the output directory: %m") : 0;
}
