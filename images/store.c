/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <sodium.h>

#include "copyhash.h"
#include "common/fileio.h"
#include "signing/hash.h"
#include "inspect.h"
#include "signing/minisign.h"
#include "qcow2.h"
#include "store.h"

#define TRUSTED_KEYS_MAX 64
#define COPY_BUF (4u * 1024u * 1024u)

struct ImageStore {
        char *images_dir, *blobs_dir, *manifests_dir, *current_dir;
        char *hwm_dir, *keys_dir;
        uint64_t max_file_bytes;
        pthread_mutex_t commit_lock;
        bool inspect;              /* libguestfs inspection of the disk holding guest-init */
        bool inspect_force_tcg;
        char *inspect_cache_dir;
};

static int mkdir_p(const char *path, mode_t mode) {
        if (mkdir(path, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int image_store_open(const char *images_dir, const char *trust_dir, const char *keys_dir, uint64_t max_file_bytes,
                     ImageStore **ret, SeatError **ret_error) {
        _cleanup_(image_store_freep) ImageStore *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->commit_lock, NULL);
        s->max_file_bytes = max_file_bytes;
        s->inspect = true;
        if (!(s->images_dir = strdup(images_dir)) || !(s->keys_dir = strdup(keys_dir)) ||
            asprintf(&s->blobs_dir, "%s/blobs", images_dir) < 0 ||
            asprintf(&s->manifests_dir, "%s/manifests", images_dir) < 0 ||
            asprintf(&s->current_dir, "%s/current", images_dir) < 0 || asprintf(&s->hwm_dir, "%s/hwm", trust_dir) < 0)
                return -ENOMEM;
        const char *dirs[] = { s->images_dir, s->blobs_dir, s->manifests_dir, s->current_dir, trust_dir, s->hwm_dir };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                int r = mkdir_p(dirs[i], 0755);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "create store directory '%s': %s", dirs[i], strerror(-r));
        }
        *ret = TAKE_PTR(s);
        return 0;
}

ImageStore *image_store_free(ImageStore *s) {
        if (!s)
                return NULL;
        FREE_MANY(s->images_dir, s->blobs_dir, s->manifests_dir, s->current_dir, s->hwm_dir, s->keys_dir,
                  s->inspect_cache_dir);
        pthread_mutex_destroy(&s->commit_lock);
        return mfree(s);
}

int image_store_set_inspect(ImageStore *s, bool enabled, const char *cache_dir, bool force_tcg) {
        _cleanup_free_ char *dir = NULL;
        if (cache_dir && !(dir = strdup(cache_dir)))
                return -ENOMEM;
        int r = enabled && cache_dir ? mkdir_p(cache_dir, 0700) : 0;
        if (r < 0)
                return r;
        free(s->inspect_cache_dir);
        s->inspect_cache_dir = TAKE_PTR(dir);
        s->inspect = enabled;
        s->inspect_force_tcg = force_tcg;
        return 0;
}

/* ---- trust: keys and high-water marks ---- */

static int key_file_filter(const struct dirent *d) {
        size_t n = strlen(d->d_name);
        return d->d_name[0] != '.' && n > 4 && !strcmp(d->d_name + n - 4, ".pub");
}

/* Tries every trusted key; a key id mismatch moves on to the next key. */
static int verify_with_trusted_keys(ImageStore *s, const char *data, size_t len, const char *sig, size_t sig_len,
                                    char ret_key_id[17], SeatError **ret_error) {
        struct dirent **list = NULL;
        int n = scandir(s->keys_dir, &list, key_file_filter, alphasort);
        if (n < 0)
                return seat_error_set(ret_error, errno, "read trusted keys directory '%s': %m (add keys with 'seat-sign keygen' and copy the .pub there)",
                                      s->keys_dir);
        int r = -ENOKEY;
        _cleanup_error_ SeatError *last = NULL;
        for (int i = 0; i < n; i++) {
                if (i < TRUSTED_KEYS_MAX && r == -ENOKEY) {
                        _cleanup_free_ char *path = NULL;
                        SeatPublicKey pk;
                        if (asprintf(&path, "%s/%s", s->keys_dir, list[i]->d_name) >= 0 &&
                            seat_public_key_load(path, &pk, NULL) >= 0) {
                                last = seat_error_free(last);
                                r = seat_verify_buffer(&pk, data, len, sig, sig_len, SEAT_VERIFY_REQUIRE_PREHASHED, NULL,
                                                       &last);
                                if (r >= 0 && ret_key_id)
                                        snprintf(ret_key_id, 17, "%016" PRIX64, seat_key_id_value(pk.key_id));
                        }
                }
                free(list[i]);
        }
        free(list);
        if (r >= 0)
                return 0;
        if (r == -ENOKEY)
                return seat_error_set(ret_error, ENOKEY, "the manifest is not signed by any trusted key in '%s'%s%s",
                                      s->keys_dir, last ? ": " : "", last ? last->message : "");
        return seat_error_set(ret_error, -r, "manifest signature refused: %s", last ? last->message : strerror(-r));
}

static int read_number_file(const char *path, int64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r = read_file_capped(path, 64, &text, NULL);
        if (r == -ENOENT) {
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r;
        char *end = NULL;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if (errno || end == text || (*end && *end != '\n') || v < 0)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int image_store_high_water(ImageStore *s, const char *name, int64_t *ret) {
        _cleanup_free_ char *path = NULL;
        if (!image_name_valid(name))
                return -EINVAL;
        if (asprintf(&path, "%s/%s", s->hwm_dir, name) < 0)
                return -ENOMEM;
        return read_number_file(path, ret);
}

static int write_number_file(const char *path, int64_t v) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%" PRId64 "\n", v);
        return write_file_atomic(path, buf, (size_t) n, 0644);
}

/* ---- manifest policy ---- */

static int check_policy(ImageStore *s, const ImageManifest *m, SeatError **ret_error) {
        int64_t hwm = 0;
        if (m->expires <= (int64_t) time(NULL))
                return seat_error_set(ret_error, EKEYEXPIRED, "image '%s' version %" PRId64 " expired (ask its publisher for a new version)",
                                      m->name, m->version);
        int r = image_store_high_water(s, m->name, &hwm);
        if (r < 0)
                return seat_error_set(ret_error, -r, "read the high-water mark of '%s': %s", m->name, strerror(-r));
        if (m->version < hwm)
                return seat_error_set(ret_error, ESTALE,
                                      "image '%s' version %" PRId64 " is older than version %" PRId64 ", which was already accepted (no rollback)",
                                      m->name, m->version, hwm);
        return 0;
}

int image_store_check_manifest(ImageStore *s, const char *manifest, size_t len, const char *sig, size_t sig_len,
                               ImageManifest **ret, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        char key_id[17] = "";
        int r = verify_with_trusted_keys(s, manifest, len, sig, sig_len, key_id, ret_error);
        if (r < 0)
                return r;
        r = image_manifest_parse(manifest, len, &m, ret_error);
        if (r < 0)
                return r;
        memcpy(m->key_id, key_id, sizeof(key_id));
        for (size_t i = 0; i < m->n_files; i++)
                if (m->files[i].size > s->max_file_bytes)
                        return seat_error_set(ret_error, EFBIG, "file '%s' of image '%s' is larger than max_image_bytes (%" PRIu64 ")",
                                              m->files[i].name, m->name, s->max_file_bytes);
        r = check_policy(s, m, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

/* ---- copying one file in, hashing as it goes ---- */

char *image_store_blob_path(ImageStore *s, const ImageFile *f) {
        char hex[SEAT_HASH_HEX_LEN + 1];
        char *p = NULL;
        if (digest_to_hex(f->identity, SEAT_HASH_BYTES, hex, sizeof(hex)) < 0 ||
            asprintf(&p, "%s/%s", s->blobs_dir, hex) < 0)
                return NULL;
        return p;
}

static int copy_file(ImageStore *s, int src, int dst, const ImageFile *f, const StoreCallbacks *cb, ChunkDigests *ret,
                     uint8_t **ret_head, size_t *ret_head_len, SeatError **ret_error) {
        _cleanup_(chunk_hasher_freep) ChunkHasher *h = NULL;
        _cleanup_free_ uint8_t *buf = malloc(COPY_BUF), *head = malloc(QCOW2_HEAD_MAX);
        uint64_t done = 0;
        size_t head_len = 0;
        int r;

        if (!buf || !head)
                return -ENOMEM;
        if (f->chunk_size <= COPYHASH_CHUNK_MAX) {
                /* The usual case: chunks hashed on every core while the copy goes on. */
                r = copy_and_hash(src, dst, f->size, f->chunk_size, f->name, cb, ret, head, QCOW2_HEAD_MAX, &head_len,
                                  ret_error);
                if (r < 0)
                        return r;
                *ret_head = TAKE_PTR(head);
                *ret_head_len = head_len;
                return 0;
        }
        r = chunk_hasher_new(f->chunk_size, f->size, &h);
        if (r < 0)
                return seat_error_set(ret_error, -r, "chunk hasher: %s", strerror(-r));
        (void) posix_fadvise(src, 0, 0, POSIX_FADV_SEQUENTIAL);

        for (;;) {
                if (cb && cb->cancelled && cb->cancelled(cb->userdata))
                        return seat_error_set(ret_error, ECANCELED, "import of '%s' cancelled", f->name);
                ssize_t n = read(src, buf, COPY_BUF);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return seat_error_set(ret_error, errno, "read '%s': %m", f->name);
                }
                if (n == 0)
                        break;
                if (done + (uint64_t) n > f->size)
                        return seat_error_set(ret_error, EFBIG, "'%s' is larger than the %" PRIu64 " bytes its manifest declares",
                                              f->name, f->size);
                r = chunk_hasher_update(h, buf, (size_t) n);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "hash '%s': %s", f->name, strerror(-r));
                r = loop_write(dst, buf, (size_t) n);
                if (r < 0)
                        return seat_error_set(ret_error, -r, "write the store copy of '%s': %s", f->name, strerror(-r));
                if (head_len < QCOW2_HEAD_MAX) {
                        size_t k = MIN((size_t) n, QCOW2_HEAD_MAX - head_len);
                        memcpy(head + head_len, buf, k);
                        head_len += k;
                }
                done += (uint64_t) n;
                if (cb && cb->progress)
                        cb->progress(cb->userdata, f->name, done, f->size);
        }
        if (done != f->size)
                return seat_error_set(ret_error, EBADMSG, "'%s' has %" PRIu64 " bytes, its manifest declares %" PRIu64,
                                      f->name, done, f->size);
        r = chunk_hasher_finish(h, ret);
        if (r < 0)
                return seat_error_set(ret_error, -r, "hash '%s': %s", f->name, strerror(-r));
        *ret_head = TAKE_PTR(head);
        *ret_head_len = head_len;
        return 0;
}

static int compare_digests(const ImageFile *f, const ChunkDigests *d, SeatError **ret_error) {
        if (d->n_chunks != f->n_chunks)
                return seat_error_set(ret_error, EBADMSG, "'%s' has %zu chunks, its manifest lists %zu", f->name, d->n_chunks,
                                      f->n_chunks);
        for (size_t i = 0; i < f->n_chunks; i++)
                if (memcmp(d->chunks[i], f->chunks[i], SEAT_HASH_BYTES) != 0)
                        return seat_error_set(ret_error, EBADMSG,
                                              "chunk %zu of '%s' (bytes %" PRIu64 "..) does not match its signed digest", i,
                                              f->name, (uint64_t) i * f->chunk_size);
        if (memcmp(d->identity, f->identity, SEAT_HASH_BYTES) != 0)
                return seat_error_set(ret_error, EBADMSG, "'%s' does not match its signed identity", f->name);
        return 0;
}

static int store_one_file(ImageStore *s, const char *dir, const ImageFile *f, const StoreCallbacks *cb,
                          bool *ret_created, SeatError **ret_error) {
        _cleanup_free_ char *blob = image_store_blob_path(s, f), *src_path = NULL, *tmp = NULL;
        _cleanup_free_ uint8_t *head = NULL;
        _cleanup_(chunk_digests_done) ChunkDigests d = {};
        size_t head_len = 0;
        struct stat st;
        int r;

        if (!blob || asprintf(&src_path, "%s/%s", dir, f->name) < 0 || asprintf(&tmp, "%s/.import-XXXXXX", s->blobs_dir) < 0)
                return -ENOMEM;
        if (access(blob, F_OK) == 0) {
                /* The same verified bytes are stored already (another image or version, or
                 * this manifest's own other file): not copied again, but still held to
                 * what this manifest says they are (a qcow2 listed again as raw is the
                 * confusion the format check exists for). */
                _cleanup_close_ int fd = open(blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
                _cleanup_free_ uint8_t *h = malloc(QCOW2_HEAD_MAX);
                if (fd < 0 || !h)
                        return seat_error_set(ret_error, fd < 0 ? errno : ENOMEM, "read the stored copy of '%s': %m", f->name);
                ssize_t n = pread(fd, h, QCOW2_HEAD_MAX, 0);
                if (n < 0)
                        return seat_error_set(ret_error, errno, "read the stored copy of '%s': %m", f->name);
                return image_format_check(f->format, h, (size_t) n, f->size, f->name, ret_error);
        }

        /* O_NONBLOCK: a FIFO in its place is refused below, not waited on forever (the
         * worker could not be cancelled there); no effect on a regular file's reads. */
        _cleanup_close_ int src = open(src_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (src < 0)
                return seat_error_set(ret_error, errno, "open '%s': %m (the manifest's files must be beside it)", src_path);
        if (fstat(src, &st) < 0 || !S_ISREG(st.st_mode))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a regular file", src_path);
        if ((uint64_t) st.st_size != f->size)
                return seat_error_set(ret_error, EBADMSG, "'%s' has %" PRIu64 " bytes, its manifest declares %" PRIu64,
                                      src_path, (uint64_t) st.st_size, f->size);

        _cleanup_close_ int dst = mkostemp(tmp, O_CLOEXEC);
        if (dst < 0)
                return seat_error_set(ret_error, errno, "create a file in '%s': %m", s->blobs_dir);
        r = copy_file(s, src, dst, f, cb, &d, &head, &head_len, ret_error);
        if (r >= 0)
                r = compare_digests(f, &d, ret_error);
        if (r >= 0)
                r = image_format_check(f->format, head, head_len, f->size, f->name, ret_error);
        if (r >= 0 && (fchmod(dst, 0444) < 0 || fsync(dst) < 0))
                r = seat_error_set(ret_error, errno, "finish the store copy of '%s': %m", f->name);
        if (r >= 0 && rename(tmp, blob) < 0)
                r = seat_error_set(ret_error, errno, "store '%s': %m", f->name);
        if (r < 0)
                (void) unlink(tmp);
        else
                *ret_created = true;
        return r;
}

/* The disk holding guest-init (the first disk: the appliance's /dev/sda), inspected in a
 * libguestfs appliance: its verified blob, never the caller's file (images/inspect.h). */
static int inspect_guest_init_disk(ImageStore *s, const ImageManifest *m, SeatError **ret_error) {
        const ImageInspectOptions opts = { .cache_dir = s->inspect_cache_dir, .force_tcg = s->inspect_force_tcg };
        if (!s->inspect || !m->guest_init_filesystem)
                return 0;
        for (size_t i = 0; i < m->n_files; i++) {
                if (m->files[i].role != IMAGE_ROLE_DISK)
                        continue;
                _cleanup_free_ char *blob = image_store_blob_path(s, &m->files[i]);
                if (!blob)
                        return -ENOMEM;
                return image_inspect(blob, m->files[i].format, m, &opts, ret_error);
        }
        return 0;
}

static void remove_blob_unless_used(ImageStore *s, const ImageFile *f);

/* ---- commit ---- */

static int read_stored_manifest(ImageStore *s, const char *name, int64_t version, char **ret, size_t *ret_len,
                                char **ret_sig, size_t *ret_sig_len) {
        _cleanup_free_ char *p = NULL, *ps = NULL, *m = NULL;
        size_t n = 0;
        if (asprintf(&p, "%s/%s/%" PRId64 ".json", s->manifests_dir, name, version) < 0 ||
            asprintf(&ps, "%s.minisig", p) < 0)
                return -ENOMEM;
        int r = read_file_capped(p, IMAGE_MANIFEST_MAX, &m, &n);
        if (r < 0)
                return r;
        if (ret_sig && (r = read_file_capped(ps, SEAT_SIG_FILE_MAX, ret_sig, ret_sig_len)) < 0)
                return r;
        *ret = TAKE_PTR(m);
        *ret_len = n;
        return 0;
}

static int commit(ImageStore *s, const ImageManifest *m, const char *manifest, size_t len, const char *sig,
                  size_t sig_len, SeatError **ret_error) {
        _cleanup_free_ char *dir = NULL, *mp = NULL, *sp = NULL, *cur = NULL, *hwm_path = NULL;
        int64_t hwm = 0;
        int r;

        pthread_mutex_lock(&s->commit_lock);
        /* Again under the lock: another import may have raised the mark meanwhile. */
        r = image_store_high_water(s, m->name, &hwm);
        if (r >= 0 && m->version < hwm)
                r = seat_error_set(ret_error, ESTALE, "image '%s' version %" PRId64 " is older than version %" PRId64 ", accepted meanwhile",
                                   m->name, m->version, hwm);
        if (r >= 0 && (asprintf(&dir, "%s/%s", s->manifests_dir, m->name) < 0 ||
                       asprintf(&mp, "%s/%" PRId64 ".json", dir, m->version) < 0 || asprintf(&sp, "%s.minisig", mp) < 0 ||
                       asprintf(&cur, "%s/%s", s->current_dir, m->name) < 0 ||
                       asprintf(&hwm_path, "%s/%s", s->hwm_dir, m->name) < 0))
                r = -ENOMEM;
        if (r >= 0 && m->version == hwm) {
                /* The same version again: only the very same manifest (idempotent import). */
                _cleanup_free_ char *old = NULL;
                size_t old_len = 0;
                if (read_stored_manifest(s, m->name, m->version, &old, &old_len, NULL, NULL) < 0 || old_len != len ||
                    memcmp(old, manifest, len) != 0)
                        r = seat_error_set(ret_error, ESTALE,
                                           "image '%s' version %" PRId64 " was already accepted with other contents: publish a new version",
                                           m->name, m->version);
        }
        if (r >= 0 && (r = mkdir_p(dir, 0755)) < 0)
                r = seat_error_set(ret_error, -r, "create '%s': %s", dir, strerror(-r));
        /* The mark before current: a commit that fails halfway (the disk full, seatd
         * killed) must never leave current above the mark, which would let a replayed
         * older version in. A mark above current only refuses what is older anyway, and
         * the same version again is the stored manifest (written first). */
        if (r >= 0 && ((r = write_file_atomic(mp, manifest, len, 0444)) < 0 ||
                       (r = write_file_atomic(sp, sig, sig_len, 0444)) < 0 ||
                       (r = write_number_file(hwm_path, m->version)) < 0 || (r = write_number_file(cur, m->version)) < 0))
                r = seat_error_set(ret_error, -r, "record image '%s' in the store: %s", m->name, strerror(-r));
        pthread_mutex_unlock(&s->commit_lock);
        return r;
}

int image_store_import_from(ImageStore *s, const char *manifest, size_t manifest_len, const char *sig,
                            size_t sig_len, const char *dir, const StoreCallbacks *cb, ImageManifest **ret,
                            SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        int r = image_store_check_manifest(s, manifest, manifest_len, sig, sig_len, &m, ret_error);
        if (r < 0)
                return r;
        bool created[IMAGE_FILES_MAX] = {};
        for (size_t i = 0; i < m->n_files && r >= 0; i++)
                r = store_one_file(s, dir, &m->files[i], cb, &created[i], ret_error);
        if (r >= 0)
                r = inspect_guest_init_disk(s, m, ret_error);
        if (r >= 0)
                r = commit(s, m, manifest, manifest_len, sig, sig_len, ret_error);
        if (r < 0) {
                /* Nothing of a refused import stays; blobs that other images use do. */
                for (size_t i = 0; i < m->n_files; i++)
                        if (created[i])
                                remove_blob_unless_used(s, &m->files[i]);
                return r;
        }
        if (ret)
                *ret = TAKE_PTR(m);
        return 0;
}

int image_store_import(ImageStore *s, const char *manifest_path, const StoreCallbacks *cb, ImageManifest **ret,
                       SeatError **ret_error) {
        _cleanup_free_ char *manifest = NULL, *sig = NULL, *sig_path = NULL, *copy = NULL;
        size_t len = 0, sig_len = 0;
        int r;

        if (manifest_path[0] != '/')
                return seat_error_set(ret_error, EINVAL, "manifest path '%s' must be absolute", manifest_path);
        if (asprintf(&sig_path, "%s.minisig", manifest_path) < 0 || !(copy = strdup(manifest_path)))
                return -ENOMEM;
        r = read_file_capped(manifest_path, IMAGE_MANIFEST_MAX, &manifest, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "read manifest '%s': %s", manifest_path, strerror(-r));
        r = read_file_capped(sig_path, SEAT_SIG_FILE_MAX, &sig, &sig_len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "read signature '%s': %s (sign the manifest with 'seat-sign sign')",
                                      sig_path, strerror(-r));
        char *slash = strrchr(copy, '/');
        *slash = '\0';
        return image_store_import_from(s, manifest, len, sig, sig_len, copy[0] ? copy : "/", cb, ret, ret_error);
}

/* ---- reading the store ---- */

int image_store_get(ImageStore *s, const char *name, ImageManifest **ret, SeatError **ret_error) {
        _cleanup_free_ char *cur = NULL, *manifest = NULL, *sig = NULL;
        size_t len = 0, sig_len = 0;
        int64_t version = 0;
        int r;

        if (!image_name_valid(name))
                return seat_error_set(ret_error, EINVAL, "'%s' is not a valid image name", name);
        if (asprintf(&cur, "%s/%s", s->current_dir, name) < 0)
                return -ENOMEM;
        r = read_number_file(cur, &version);
        if (r < 0 || version == 0)
                return seat_error_set(ret_error, ENOENT, "no image named '%s' (see 'seatctl image list')", name);
        r = read_stored_manifest(s, name, version, &manifest, &len, &sig, &sig_len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "stored manifest of '%s' version %" PRId64 ": %s", name, version,
                                      strerror(-r));
        /* The store is ours, but a manifest is only ever used with its signature checked. */
        char key_id[17] = "";
        r = verify_with_trusted_keys(s, manifest, len, sig, sig_len, key_id, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "stored image '%s'", name);
        r = image_manifest_parse(manifest, len, ret, ret_error);
        if (r >= 0)
                memcpy((*ret)->key_id, key_id, sizeof(key_id));
        return r;
}

static int name_filter(const struct dirent *d) {
        return image_name_valid(d->d_name);
}

int image_store_list(ImageStore *s, char ***ret, SeatError **ret_error) {
        struct dirent **list = NULL;
        int n = scandir(s->current_dir, &list, name_filter, alphasort);
        if (n < 0)
                return seat_error_set(ret_error, errno, "read '%s': %m", s->current_dir);
        char **names = calloc((size_t) n + 1, sizeof(char *));
        int r = names ? 0 : -ENOMEM;
        for (int i = 0; i < n; i++) {
                if (r >= 0 && !(names[i] = strdup(list[i]->d_name)))
                        r = -ENOMEM;
                free(list[i]);
        }
        free(list);
        if (r < 0) {
                strv_free(names);
                return r;
        }
        *ret = names;
        return 0;
}

/* ---- verify: every chunk re-hashed, on every core ---- */

typedef struct VerifyShared {
        int fd;
        const ImageFile *f;
        atomic_size_t next;
        atomic_int failed_chunk; /* -1: none */
        atomic_int error;
        atomic_uint_fast64_t done;
        const StoreCallbacks *cb;
} VerifyShared;

/* What one verify thread reads at once: chunks may be up to 1 GiB, and a buffer of a
 * whole chunk on each of 16 threads came to 16 GiB. A chunk is hashed in pieces. */
#define VERIFY_PIECE (1024u * 1024u)

static void *verify_worker(void *p) {
        VerifyShared *v = p;
        size_t piece = MIN((size_t) v->f->chunk_size, (size_t) VERIFY_PIECE);
        uint8_t *buf = malloc(piece);
        if (!buf) {
                atomic_store(&v->error, ENOMEM);
                return NULL;
        }
        for (;;) {
                size_t i = atomic_fetch_add(&v->next, 1);
                if (i >= v->f->n_chunks || atomic_load(&v->failed_chunk) >= 0 || atomic_load(&v->error))
                        break;
                if (v->cb && v->cb->cancelled && v->cb->cancelled(v->cb->userdata)) {
                        atomic_store(&v->error, ECANCELED);
                        break;
                }
                uint64_t off = (uint64_t) i * v->f->chunk_size;
                size_t want = (size_t) MIN((uint64_t) v->f->chunk_size, v->f->size - off);
                size_t got = 0;
                crypto_generichash_state st;
                crypto_generichash_init(&st, NULL, 0, SEAT_HASH_BYTES);
                while (got < want) {
                        ssize_t n = pread(v->fd, buf, MIN(piece, want - got), (off_t) (off + got));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                atomic_store(&v->error, n < 0 ? errno : EBADMSG);
                                goto out;
                        }
                        crypto_generichash_update(&st, buf, (size_t) n);
                        got += (size_t) n;
                }
                uint8_t d[SEAT_HASH_BYTES];
                if (crypto_generichash_final(&st, d, SEAT_HASH_BYTES) != 0 || memcmp(d, v->f->chunks[i], SEAT_HASH_BYTES) != 0) {
                        int expected = -1;
                        atomic_compare_exchange_strong(&v->failed_chunk, &expected, (int) i);
                        break;
                }
                atomic_fetch_add(&v->done, want);
        }
out:
        free(buf);
        return NULL;
}

static int verify_file(ImageStore *s, const ImageFile *f, const StoreCallbacks *cb, SeatError **ret_error) {
        _cleanup_free_ char *blob = image_store_blob_path(s, f);
        struct stat st;
        if (!blob)
                return -ENOMEM;
        _cleanup_close_ int fd = open(blob, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return seat_error_set(ret_error, EBADMSG, "stored copy of '%s' is missing: %m", f->name);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t) st.st_size != f->size)
                return seat_error_set(ret_error, EBADMSG, "stored copy of '%s' has the wrong size", f->name);

        VerifyShared v = { .fd = fd, .f = f, .cb = cb };
        atomic_init(&v.failed_chunk, -1);
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        size_t nthreads = (size_t) MAX(1, MIN(ncpu, 16L));
        pthread_t threads[16];
        size_t started = 0;
        for (size_t i = 1; i < nthreads; i++)
                if (pthread_create(&threads[started], NULL, verify_worker, &v) == 0)
                        started++;
        /* This thread works too, and reports progress while it does. */
        verify_worker(&v);
        for (size_t i = 0; i < started; i++)
                pthread_join(threads[i], NULL);
        if (cb && cb->progress)
                cb->progress(cb->userdata, f->name, atomic_load(&v.done), f->size);

        int e = atomic_load(&v.error);
        if (e)
                return seat_error_set(ret_error, e, "verify '%s': %s", f->name, strerror(e));
        int bad = atomic_load(&v.failed_chunk);
        if (bad >= 0)
                return seat_error_set(ret_error, EBADMSG, "stored copy of '%s' differs from its signed digest in chunk %d",
                                      f->name, bad);
        return 0;
}

int image_store_verify(ImageStore *s, const char *name, const StoreCallbacks *cb, ImageManifest **ret,
                       SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        int r = image_store_get(s, name, &m, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_files; i++) {
                r = verify_file(s, &m->files[i], cb, ret_error);
                if (r < 0)
                        break;
        }
        if (ret)
                *ret = TAKE_PTR(m);
        return r;
}

/* Blobs are shared by content: one goes only when no other stored image names it. */
static void remove_blob_unless_used(ImageStore *s, const ImageFile *f) {
        _cleanup_strv_free_ char **names = NULL;
        if (image_store_list(s, &names, NULL) < 0)
                return; /* when in doubt, keep it */
        for (char **n = names; *n; n++) {
                _cleanup_(image_manifest_freep) ImageManifest *other = NULL;
                if (image_store_get(s, *n, &other, NULL) < 0)
                        return;
                for (size_t i = 0; i < other->n_files; i++)
                        if (!memcmp(other->files[i].identity, f->identity, SEAT_HASH_BYTES))
                                return;
        }
        _cleanup_free_ char *blob = image_store_blob_path(s, f);
        if (blob)
                (void) unlink(blob);
}

int image_store_remove(ImageStore *s, const char *name, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        _cleanup_free_ char *cur = NULL;
        int r = image_store_get(s, name, &m, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&cur, "%s/%s", s->current_dir, name) < 0)
                return -ENOMEM;
        pthread_mutex_lock(&s->commit_lock);
        /* The name goes first: nothing can pick the image up while its blobs go. The
         * high-water mark stays: removing an image must not open the door to a rollback. */
        r = unlink(cur) < 0 ? negative_errno() : 0;
        pthread_mutex_unlock(&s->commit_lock);
        if (r >= 0)
                for (size_t i = 0; i < m->n_files; i++)
                        remove_blob_unless_used(s, &m->files[i]);
        if (r < 0)
                return seat_error_set(ret_error, -r, "remove image '%s': %s", name, strerror(-r));
        return 0;
}
