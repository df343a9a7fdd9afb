/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* archive.c: the archive's names and small formats shared by the manifest, sealing and reading. */
#include "archive-internal.h"

static const char *const roles[] = { "audit", "console", "capture", "recording", "file", "symlink" };

bool role_valid(const char *r) {
        for (size_t i = 0; i < ELEMENTSOF(roles); i++)
                if (strcmp(r, roles[i]) == 0)
                        return true;
        return false;
}

static bool charset_ok(const char *s, size_t max, const char *set) {
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr(set, s[i]))
                        return false;
        return true;
}

#define NAME_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

bool archive_name_is_safe(const char *name) {
        return name && charset_ok(name, ARCHIVE_NAME_MAX, NAME_CHARS) && name[0] != '.';
}

bool seat_id_valid(const char *s) {
        return s && charset_ok(s, ARCHIVE_SEAT_ID_MAX, NAME_CHARS);
}

bool session_valid(const char *s) {
        return s && strlen(s) >= 32 && charset_ok(s, ARCHIVE_SESSION_MAX, "0123456789abcdef");
}

bool printable_ok(const char *s, size_t max) {
        size_t n = strlen(s);
        if (n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] >= 0x7f)
                        return false;
        return true;
}

/* "NNNN-" + the name with every byte outside [A-Za-z0-9._-] as '_', at most 100 chars. */
void sanitise_name(size_t index, const char *given, char out[ARCHIVE_NAME_MAX + 1]) {
        int n = snprintf(out, ARCHIVE_NAME_MAX + 1, "%04u-", (unsigned) (index + 1));
        size_t o = (size_t) n;
        for (const char *p = given; *p && o < ARCHIVE_NAME_MAX; p++)
                out[o++] = strchr(NAME_CHARS, *p) && *p ? *p : '_';
        if (o == (size_t) n)
                out[o++] = '_';
        out[o] = '\0';
}

/* The given name for the manifest: printable ASCII, everything else '?'. */
void origin_text(const char *given, char out[ARCHIVE_ORIGIN_MAX + 1]) {
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *) given; *p && o < ARCHIVE_ORIGIN_MAX; p++)
                out[o++] = *p >= 0x20 && *p < 0x7f ? (char) *p : '?';
        out[o] = '\0';
}

void put_le32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

uint64_t chunks_for(uint64_t stream_size) {
        return stream_size == 0 ? 1 : (stream_size + ARCHIVE_CHUNK_SIZE - 1) / ARCHIVE_CHUNK_SIZE;
}

uint64_t payload_size_for(uint64_t stream_size) {
        uint64_t n = chunks_for(stream_size);
        return 4 + ARCHIVE_SEALED_KEY_BYTES + SS_HEADER + n * (4 + SS_ABYTES) + stream_size;
}

char *trusted_comment(const char *seat, const char *session) {
        char *tc = NULL;
        if (asprintf(&tc, "seatd-evidence seat:%s session:%s", seat, session) < 0)
                return NULL;
        return tc;
}

int archive_seal_audit_key(const SeatBoxPublicKey *facilitator, const uint8_t key[AUDIT_KEY_BYTES],
                           uint8_t ret_sealed[ARCHIVE_SEALED_AUDIT_KEY_BYTES]) {
        return seat_box_seal(facilitator, key, AUDIT_KEY_BYTES, ret_sealed);
}

/* Manifest + signature as the archive's head: magic, lengths, bytes. */
int build_head(const ArchiveManifest *m, const SeatSecretKey *sk, uint8_t **ret, size_t *ret_len,
                      SeatError **ret_error) {
        _cleanup_free_ char *json = NULL, *sig = NULL, *tc = NULL;
        size_t jlen = 0;
        int r = manifest_format(m, &json, &jlen);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot format the manifest: %s", strerror(-r));
        jlen--; /* json_frame_format appends '\n': the manifest is the object alone */
        tc = trusted_comment(m->seat, m->session);
        if (!tc)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = seat_sign_buffer(sk, json, jlen, tc, "seatd evidence manifest", &sig, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "sign the manifest");
        size_t slen = strlen(sig), total = ARCHIVE_MAGIC_LEN + 4 + jlen + 4 + slen;
        uint8_t *h = malloc(total), *p = h;
        if (!h)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        memcpy(p, ARCHIVE_MAGIC, ARCHIVE_MAGIC_LEN), p += ARCHIVE_MAGIC_LEN;
        put_le32(p, (uint32_t) jlen), p += 4;
        memcpy(p, json, jlen), p += jlen;
        put_le32(p, (uint32_t) slen), p += 4;
        memcpy(p, sig, slen);
        *ret = h;
        *ret_len = total;
        return 0;
}

int seal_payload(Sealer *s, ArchiveManifest *m, const SeatBoxPublicKey *fac, SealInputs *in,
                        SeatError **ret_error) {
        _cleanup_sodium_ uint8_t *key = sodium_malloc(crypto_secretstream_xchacha20poly1305_KEYBYTES);
        uint8_t sealed[4 + ARCHIVE_SEALED_KEY_BYTES], header[SS_HEADER];
        int r;

        if (!key)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        crypto_secretstream_xchacha20poly1305_keygen(key);
        put_le32(sealed, ARCHIVE_SEALED_KEY_BYTES);
        if (seat_box_seal(fac, key, crypto_secretstream_xchacha20poly1305_KEYBYTES, sealed + 4) < 0 ||
            crypto_secretstream_xchacha20poly1305_init_push(s->ss, header, key) != 0)
                return seat_error_set(ret_error, EIO, "cannot set up the encryption");
        r = sealer_write(s, sealed, sizeof(sealed), ret_error);
        if (r >= 0)
                r = sealer_write(s, header, sizeof(header), ret_error);
        if (r >= 0 && (r = writer_start(s)) < 0)
                seat_error_set(ret_error, -r, "cannot start the archive writer: %s", strerror(-r));
        for (size_t i = 0; r >= 0 && i < m->n_members; i++)
                r = seal_member(s, m->members + i, in->fds[i], m->created_ms / 1000, ret_error);
        if (r >= 0) {
                uint8_t zero[2 * TAR_BLOCK] = {};
                r = sealer_feed(s, zero, sizeof(zero), ret_error);
        }
        if (r >= 0)
                r = sealer_flush(s, ret_error);
        int w = writer_stop(&s->w);
        if (r >= 0 && w < 0)
                r = write_failed(s, w, ret_error);
        if (r < 0)
                return r;
        if (s->chunks_left != 0 || s->written != m->payload_size)
                return seat_error_set(ret_error, EIO, "sealing '%s': the payload does not match its plan", s->path);
        crypto_generichash_final(&s->payload_hash, m->payload_digest, 64);
        return 0;
}

int read_block(Source *s, uint32_t min, uint32_t max, const char *what, uint8_t **ret, uint32_t *ret_len,
                      SeatError **ret_error) {
        uint8_t le[4];
        int r = src_read(s, le, 4);
        if (r < 0)
                return read_fail(ret_error, r, what);
        uint32_t n = get_le32(le);
        if (n < min || n > max)
                return seat_error_set(ret_error, EBADMSG, "the archive's %s length %" PRIu32 " is out of range (%" PRIu32
                                      "..%" PRIu32 ")", what, n, min, max);
        _cleanup_free_ uint8_t *b = malloc((size_t) n + 1);
        if (!b)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = src_read(s, b, n);
        if (r < 0)
                return read_fail(ret_error, r, what);
        b[n] = 0;
        *ret = TAKE_PTR(b);
        *ret_len = n;
        return 0;
}

static int verify_source(Source *s, const SeatPublicKey *host, const char *seat, const char *session,
                         ArchiveManifest **ret_manifest, SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        int r = read_head(s, host, &m, ret_error);
        if (r < 0)
                return r;
        r = archive_check_expected(m, seat, session, ret_error);
        if (r < 0)
                return r;
        r = walk_payload(s, m, NULL, ret_error);
        if (r < 0)
                return r;
        if (ret_manifest)
                *ret_manifest = TAKE_PTR(m);
        return 0;
}

int archive_verify(const char *path, const SeatPublicKey *host, const char *expected_seat,
                   const char *expected_session, ArchiveManifest **ret_manifest, SeatError **ret_error) {
        if (!path || !host)
                return seat_error_set(ret_error, EINVAL, "verifying an archive needs its path and the host key");
        _cleanup_close_ int fd = open_archive_fd(path, ret_error);
        if (fd < 0)
                return fd;
        Source s = { .fd = fd };
        int r = verify_source(&s, host, expected_seat, expected_session, ret_manifest, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "archive '%s'", path) : 0;
}

int archive_verify_buffer(const void *buf, size_t len, const SeatPublicKey *host, const char *expected_seat,
                          const char *expected_session, ArchiveManifest **ret_manifest, SeatError **ret_error) {
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        Source s = { .fd = -1, .buf = buf, .len = len };
        return verify_source(&s, host, expected_seat, expected_session, ret_manifest, ret_error);
}

int archive_inspect(const char *path, const SeatPublicKey *host, ArchiveManifest **ret_manifest,
                    SeatError **ret_error) {
        _cleanup_close_ int fd = open_archive_fd(path, ret_error);
        if (fd < 0)
                return fd;
        Source s = { .fd = fd };
        int r = read_head(&s, host, ret_manifest, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "archive '%s'", path) : 0;
}

static int verify_audit_member(const ArchiveManifest *m, const SeatBoxSecretKey *fac, Partials *p,
                               SeatError **ret_error) {
        for (size_t i = 0; i < m->n_members; i++) {
                if (strcmp(m->members[i].role, "audit") != 0)
                        continue;
                _cleanup_sodium_ uint8_t *key = sodium_malloc(AUDIT_KEY_BYTES);
                uint64_t count = 0;
                if (!key)
                        return seat_error_set(ret_error, ENOMEM, "out of memory");
                if (seat_box_seal_open(fac, m->audit_key_sealed, ARCHIVE_SEALED_AUDIT_KEY_BYTES, key) < 0)
                        return seat_error_set(ret_error, EKEYREJECTED,
                                              "the audit log's initial key does not open with this facilitator key");
                if (lseek(p->fds[i], 0, SEEK_SET) < 0)
                        return seat_error_set(ret_error, errno, "cannot rewind the audit log: %m");
                int r = audit_log_verify_fd(p->fds[i], key, 0, m->members[i].size, &count, ret_error);
                if (r < 0)
                        return seat_error_wrap(ret_error, "member %zu ('%s')", i + 1, m->members[i].name);
        }
        return 0;
}

static int open_source(Source *s, const SeatPublicKey *host, const SeatBoxSecretKey *fac, const char *out_dir,
                       ArchiveManifest **ret_manifest, SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_sodium_ crypto_secretstream_xchacha20poly1305_state *ss = NULL;
        _cleanup_free_ uint8_t *plain = NULL;
        _cleanup_(partials_done) Partials parts = { .dfd = -EBADF };
        SeatBoxPublicKey fpk;
        int r;

        r = read_head(s, host, &m, ret_error);
        if (r < 0)
                return r;
        seat_box_key_public(fac, &fpk);
        if (memcmp(fpk.key_id, m->facilitator_key_id, SEAT_BOX_KEY_ID_BYTES) != 0)
                return seat_error_set(ret_error, ENOKEY,
                                      "the archive is sealed to another facilitator key than the one given");
        parts.dfd = open_out_dir(out_dir, ret_error);
        if (parts.dfd < 0)
                return parts.dfd;
        r = partials_create(&parts, m, ret_error);
        if (r < 0)
                return r;
        ss = sodium_malloc(sizeof(*ss));
        plain = malloc(ARCHIVE_CHUNK_SIZE);
        if (!ss || !plain)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        TarReader tar = { .m = m, .dfd = parts.dfd, .fds = parts.fds, .phase = TAR_HEADER };
        Opener op = { .fac = fac, .ss = ss, .plain = plain, .tar = &tar };
        r = walk_payload(s, m, &op, ret_error);
        if (r < 0)
                return r;
        if (tar.phase != TAR_DONE)
                return seat_error_set(ret_error, EPIPE, "the tar stream ends early (member %zu)", tar.member + 1);
        r = verify_audit_member(m, fac, &parts, ret_error);
        if (r < 0)
                return r;
        r = partials_commit(&parts, m, ret_error);
        if (r < 0)
                return r;
        if (ret_manifest)
                *ret_manifest = TAKE_PTR(m);
        return 0;
}

int archive_open(const char *path, const SeatPublicKey *host, const SeatBoxSecretKey *facilitator,
                 const char *out_dir, ArchiveManifest **ret_manifest, SeatError **ret_error) {
        if (!path || !host || !facilitator || !out_dir)
                return seat_error_set(ret_error, EINVAL, "opening an archive needs its path, both keys and a directory");
        _cleanup_close_ int fd = open_archive_fd(path, ret_error);
        if (fd < 0)
                return fd;
        Source s = { .fd = fd };
        int r = open_source(&s, host, facilitator, out_dir, ret_manifest, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "archive '%s'", path) : 0;
}
