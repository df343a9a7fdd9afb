/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

#include "archive.h"
#include "fileio.h"
#include "hash.h"
#include "jsonframe.h"

#define FORMAT_NAME "seatd-evidence"
#define TAR_BLOCK 512U
#define SS_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES
#define SS_HEADER crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define CT_CHUNK_MAX (ARCHIVE_CHUNK_SIZE + SS_ABYTES)
#define MANIFEST_DEPTH 8
#define PARTIAL_FMT ".seatd-partial-%04u"

static void sodium_freep(void *p) {
        void **pp = p;
        sodium_free(*pp);
        *pp = NULL;
}
#define _cleanup_sodium_ _cleanup_(sodium_freep)

static const char *const roles[] = { "audit", "console", "capture", "file", "symlink" };

static bool role_valid(const char *r) {
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

static bool seat_id_valid(const char *s) {
        return s && charset_ok(s, ARCHIVE_SEAT_ID_MAX, NAME_CHARS);
}

static bool session_valid(const char *s) {
        return s && strlen(s) >= 32 && charset_ok(s, ARCHIVE_SESSION_MAX, "0123456789abcdef");
}

static bool printable_ok(const char *s, size_t max) {
        size_t n = strlen(s);
        if (n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 || (unsigned char) s[i] >= 0x7f)
                        return false;
        return true;
}

/* "NNNN-" + the name with every byte outside [A-Za-z0-9._-] as '_', at most 100 chars. */
static void sanitise_name(size_t index, const char *given, char out[ARCHIVE_NAME_MAX + 1]) {
        int n = snprintf(out, ARCHIVE_NAME_MAX + 1, "%04u-", (unsigned) (index + 1));
        size_t o = (size_t) n;
        for (const char *p = given; *p && o < ARCHIVE_NAME_MAX; p++)
                out[o++] = strchr(NAME_CHARS, *p) && *p ? *p : '_';
        if (o == (size_t) n)
                out[o++] = '_';
        out[o] = '\0';
}

/* The given name for the manifest: printable ASCII, everything else '?'. */
static void origin_text(const char *given, char out[ARCHIVE_ORIGIN_MAX + 1]) {
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *) given; *p && o < ARCHIVE_ORIGIN_MAX; p++)
                out[o++] = *p >= 0x20 && *p < 0x7f ? (char) *p : '?';
        out[o] = '\0';
}

static void put_le32(uint8_t *p, uint32_t v) {
        for (unsigned i = 0; i < 4; i++)
                p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t get_le32(const uint8_t *p) {
        return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

static uint64_t tar_padded(uint64_t n) {
        return (n + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
}

static uint64_t chunks_for(uint64_t stream_size) {
        return stream_size == 0 ? 1 : (stream_size + ARCHIVE_CHUNK_SIZE - 1) / ARCHIVE_CHUNK_SIZE;
}

static uint64_t payload_size_for(uint64_t stream_size) {
        uint64_t n = chunks_for(stream_size);
        return 4 + ARCHIVE_SEALED_KEY_BYTES + SS_HEADER + n * (4 + SS_ABYTES) + stream_size;
}

static char *trusted_comment(const char *seat, const char *session) {
        char *tc = NULL;
        if (asprintf(&tc, "seatd-evidence seat:%s session:%s", seat, session) < 0)
                return NULL;
        return tc;
}

ArchiveManifest *archive_manifest_free(ArchiveManifest *m) {
        if (!m)
                return NULL;
        free(m->members);
        free(m);
        return NULL;
}

/* ---- manifest ------------------------------------------------------------------- */

static int json_add(json_object *o, const char *key, json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_hex(json_object *o, const char *key, const uint8_t *d, size_t n) {
        char hex[2 * 128 + 1];
        if (digest_to_hex(d, n, hex, sizeof(hex)) < 0)
                return -EINVAL;
        return json_add(o, key, json_object_new_string(hex));
}

static const struct {
        const char *key;
        size_t offset;
} collection_counts[] = {
        { "files", offsetof(ArchiveCollection, files) },
        { "symlinks", offsetof(ArchiveCollection, symlinks) },
        { "bytes", offsetof(ArchiveCollection, bytes) },
        { "truncated", offsetof(ArchiveCollection, truncated) },
        { "skipped", offsetof(ArchiveCollection, skipped) },
        { "max_bytes", offsetof(ArchiveCollection, max_bytes) },
        { "max_file_bytes", offsetof(ArchiveCollection, max_file_bytes) },
        { "max_files", offsetof(ArchiveCollection, max_files) },
};

static uint64_t *collection_count(ArchiveCollection *c, size_t i) {
        return (uint64_t *) ((char *) c + collection_counts[i].offset);
}

static int collection_to_json(const ArchiveCollection *c, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        ArchiveCollection copy = *c;
        int r = 0;
        if (!o)
                return -ENOMEM;
        r |= json_add(o, "complete", json_object_new_boolean(c->complete));
        for (size_t i = 0; i < ELEMENTSOF(collection_counts); i++)
                r |= json_add(o, collection_counts[i].key, json_object_new_int64((int64_t) *collection_count(&copy, i)));
        if (c->reason[0])
                r |= json_add(o, "reason", json_object_new_string(c->reason));
        if (r != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

int archive_manifest_to_json(const ArchiveManifest *m, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *list = json_object_new_array();
        int r = 0;

        if (!o || !list) {
                json_object_put(list);
                return -ENOMEM;
        }
        r |= json_add(o, "format", json_object_new_string(FORMAT_NAME));
        r |= json_add(o, "version", json_object_new_int(ARCHIVE_VERSION));
        r |= json_add(o, "seat", json_object_new_string(m->seat));
        r |= json_add(o, "session", json_object_new_string(m->session));
        r |= json_add(o, "image", json_object_new_string(m->image));
        r |= json_add(o, "created", json_object_new_int64(m->created_ms));
        r |= add_hex(o, "facilitator_key_id", m->facilitator_key_id, SEAT_BOX_KEY_ID_BYTES);
        r |= json_add(o, "chunk_size", json_object_new_int64((int64_t) m->chunk_size));
        r |= json_add(o, "stream_size", json_object_new_int64((int64_t) m->stream_size));
        r |= json_add(o, "chunks", json_object_new_int64((int64_t) m->chunks));
        r |= json_add(o, "payload_size", json_object_new_int64((int64_t) m->payload_size));
        r |= add_hex(o, "payload_blake2b", m->payload_digest, 64);
        if (m->has_audit_key)
                r |= add_hex(o, "audit_key_sealed", m->audit_key_sealed, ARCHIVE_SEALED_AUDIT_KEY_BYTES);
        if (m->has_collection) {
                json_object *c = NULL;
                r |= collection_to_json(&m->collection, &c) < 0 ? 1 : json_add(o, "guest", c);
        }
        if (json_add(o, "members", list) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_members; i++) {
                const ArchiveMember *a = m->members + i;
                json_object *e = json_object_new_object();
                if (!e || json_object_array_add(list, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
                r |= json_add(e, "path", json_object_new_string(a->path));
                r |= json_add(e, "name", json_object_new_string(a->name));
                r |= json_add(e, "origin", json_object_new_string(a->origin));
                r |= json_add(e, "role", json_object_new_string(a->role));
                r |= json_add(e, "size", json_object_new_int64((int64_t) a->size));
                r |= json_add(e, "truncated", json_object_new_boolean(a->truncated));
                r |= json_add(e, "original_size", json_object_new_int64((int64_t) a->original_size));
                r |= add_hex(e, "blake2b", a->digest, 64);
        }
        if (r != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

void archive_manifest_describe(const ArchiveManifest *m, FILE *f) {
        char when[64] = "?";
        time_t t = (time_t) (m->created_ms / 1000);
        struct tm tm;
        if (gmtime_r(&t, &tm))
                strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
        fprintf(f, "seat:    %s\nsession: %s\ncreated: %s\nimage:   %s\n", m->seat, m->session, when,
                m->image[0] ? m->image : "-");
        if (m->has_collection) {
                const ArchiveCollection *c = &m->collection;
                fprintf(f, "guest:   %s: %" PRIu64 " file(s), %" PRIu64 " symlink(s), %" PRIu64 " bytes; %" PRIu64
                        " cut at a cap, %" PRIu64 " skipped (caps: %" PRIu64 " bytes, %" PRIu64 " per file, %" PRIu64
                        " files)\n", c->complete ? "complete" : "INCOMPLETE", c->files, c->symlinks, c->bytes,
                        c->truncated, c->skipped, c->max_bytes, c->max_file_bytes, c->max_files);
                if (c->reason[0])
                        fprintf(f, "reason:  %s\n", c->reason);
        }
        fprintf(f, "members:\n");
        for (size_t i = 0; i < m->n_members; i++) {
                const ArchiveMember *a = m->members + i;
                fprintf(f, "  %-8s %12" PRIu64 "%s  %s  (from '%s')\n", a->role, a->size, a->truncated ? " TRUNCATED" : "",
                        a->name, a->origin);
        }
}

static int manifest_format(const ArchiveManifest *m, char **ret, size_t *ret_len) {
        _cleanup_json_ json_object *o = NULL;
        int r = archive_manifest_to_json(m, &o);
        if (r < 0)
                return r;
        return json_frame_format(o, ARCHIVE_MANIFEST_MAX, ret, ret_len);
}

#define mf_fail(ret_error, fmt, what) seat_error_set(ret_error, EBADMSG, fmt, what)

static int get_hex(json_object *o, const char *key, uint8_t *out, size_t n) {
        const char *s = NULL;
        if (json_get_string(o, key, true, 2 * n, &s) < 0 || strlen(s) != 2 * n)
                return -EBADMSG;
        return digest_from_hex(s, 2 * n, out, n) < 0 ? -EBADMSG : 0;
}

static int copy_str(json_object *o, const char *key, size_t max, char *out, bool (*check)(const char *)) {
        const char *s = NULL;
        if (json_get_string(o, key, true, max, &s) < 0 || strlen(s) > max || (check && !check(s)))
                return -EBADMSG;
        strcpy(out, s);
        return 0;
}

static bool image_ok(const char *s) {
        return printable_ok(s, ARCHIVE_IMAGE_MAX);
}
static bool origin_ok(const char *s) {
        return printable_ok(s, ARCHIVE_ORIGIN_MAX);
}

static int member_parse(json_object *e, size_t i, ArchiveMember *a, SeatError **ret_error) {
        char want[24];
        int64_t v;

        if (!json_object_is_type(e, json_type_object))
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu is not an object", i + 1);
        snprintf(want, sizeof(want), "members/%04u", (unsigned) (i + 1));
        if (copy_str(e, "path", sizeof(a->path) - 1, a->path, NULL) < 0 || strcmp(a->path, want) != 0)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: \"path\" is not '%s'", i + 1, want);
        if (copy_str(e, "name", ARCHIVE_NAME_MAX, a->name, archive_name_is_safe) < 0)
                return seat_error_set(ret_error, EBADMSG,
                                      "manifest member %zu: \"name\" is not a safe file name (1-100 of "
                                      "[A-Za-z0-9._-], no leading '.')", i + 1);
        if (copy_str(e, "origin", ARCHIVE_ORIGIN_MAX, a->origin, origin_ok) < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"origin\"", i + 1);
        if (copy_str(e, "role", sizeof(a->role) - 1, a->role, role_valid) < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"role\"", i + 1);
        if (json_get_int64(e, "size", true, 0, (int64_t) ARCHIVE_MEMBER_HARD_MAX, &v) < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"size\"", i + 1);
        a->size = (uint64_t) v;
        if (json_get_int64(e, "original_size", true, 0, INT64_MAX, &v) < 0 || (uint64_t) v < a->size)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"original_size\"", i + 1);
        a->original_size = (uint64_t) v;
        if (json_get_bool(e, "truncated", true, &a->truncated) < 0 ||
            a->truncated != (a->original_size > a->size))
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"truncated\"", i + 1);
        if (get_hex(e, "blake2b", a->digest, 64) < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest member %zu: bad \"blake2b\"", i + 1);
        return 0;
}

static int collection_parse(json_object *o, ArchiveManifest *m, SeatError **ret_error) {
        json_object *g = NULL;
        ArchiveCollection *c = &m->collection;
        int64_t v;
        if (!json_object_object_get_ex(o, "guest", &g))
                return 0;
        if (!json_object_is_type(g, json_type_object) || json_get_bool(g, "complete", true, &c->complete) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "guest");
        for (size_t i = 0; i < ELEMENTSOF(collection_counts); i++) {
                if (json_get_int64(g, collection_counts[i].key, true, 0, (int64_t) ARCHIVE_COUNT_MAX, &v) < 0)
                        return seat_error_set(ret_error, EBADMSG, "manifest: bad \"guest\".\"%s\"", collection_counts[i].key);
                *collection_count(c, i) = (uint64_t) v;
        }
        const char *reason = NULL;
        if (json_get_string(g, "reason", false, ARCHIVE_REASON_MAX, &reason) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "guest.reason");
        for (const char *p = reason; p && *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        return mf_fail(ret_error, "manifest: bad \"%s\"", "guest.reason");
        snprintf(c->reason, sizeof(c->reason), "%s", reason ? reason : "");
        if (c->complete != (c->truncated == 0 && c->skipped == 0 && !c->reason[0]))
                return mf_fail(ret_error, "manifest: %s", "\"guest\".\"complete\" contradicts its counts");
        m->has_collection = true;
        return 0;
}

static int manifest_check(const ArchiveManifest *m, SeatError **ret_error) {
        uint64_t stream = 2 * TAR_BLOCK;
        size_t audits = 0;

        for (size_t i = 0; i < m->n_members; i++) {
                stream += TAR_BLOCK + tar_padded(m->members[i].size); /* ≤ 4096 × 2^33: no overflow */
                if (strcmp(m->members[i].role, "audit") == 0)
                        audits++;
                for (size_t j = 0; j < i; j++)
                        if (strcmp(m->members[i].name, m->members[j].name) == 0)
                                return seat_error_set(ret_error, EBADMSG, "manifest: members %zu and %zu share the name '%s'",
                                                      j + 1, i + 1, m->members[i].name);
        }
        if (m->has_collection) {
                uint64_t links = 0;
                for (size_t i = 0; i < m->n_members; i++)
                        links += strcmp(m->members[i].role, "symlink") == 0;
                if (links != m->collection.symlinks)
                        return mf_fail(ret_error, "manifest: %s", "\"guest\".\"symlinks\" does not count the symlink members");
        }
        if (m->chunk_size != ARCHIVE_CHUNK_SIZE)
                return mf_fail(ret_error, "manifest: %s is not 65536", "chunk_size");
        if (m->stream_size != stream)
                return mf_fail(ret_error, "manifest: %s does not match the members' sizes", "stream_size");
        if (m->chunks != chunks_for(stream))
                return mf_fail(ret_error, "manifest: %s does not match stream_size", "chunks");
        if (m->payload_size != payload_size_for(stream))
                return mf_fail(ret_error, "manifest: %s does not match stream_size", "payload_size");
        if (audits > 1)
                return mf_fail(ret_error, "manifest: %s", "more than one audit log");

        if (audits == 1 && !m->has_audit_key)
                return mf_fail(ret_error, "manifest: %s", "an audit log without its sealed initial key");
        return 0;
}

int archive_manifest_parse(const char *json, size_t len, ArchiveManifest **ret, SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *list = NULL;
        const char *fmt = NULL;
        int64_t v;
        int r;

        if (len > ARCHIVE_MANIFEST_MAX)
                return seat_error_set(ret_error, EFBIG, "manifest is over the cap of %u bytes", ARCHIVE_MANIFEST_MAX);
        r = json_frame_parse(json, len, MANIFEST_DEPTH, &o);
        if (r < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest is not a JSON object");
        m = calloc(1, sizeof(*m));
        if (!m)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if (json_get_string(o, "format", true, 64, &fmt) < 0 || strcmp(fmt, FORMAT_NAME) != 0)
                return mf_fail(ret_error, "manifest: \"format\" is not '%s'", FORMAT_NAME);
        if (json_get_int64(o, "version", true, 0, INT32_MAX, &v) < 0 || v != ARCHIVE_VERSION)
                return seat_error_set(ret_error, EPROTONOSUPPORT, "manifest: unsupported version (want %d)",
                                      ARCHIVE_VERSION);
        if (copy_str(o, "seat", ARCHIVE_SEAT_ID_MAX, m->seat, seat_id_valid) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "seat");
        if (copy_str(o, "session", ARCHIVE_SESSION_MAX, m->session, session_valid) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "session");
        if (copy_str(o, "image", ARCHIVE_IMAGE_MAX, m->image, image_ok) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "image");
        if (json_get_int64(o, "created", true, 0, INT64_MAX, &m->created_ms) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "created");
        if (get_hex(o, "facilitator_key_id", m->facilitator_key_id, SEAT_BOX_KEY_ID_BYTES) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "facilitator_key_id");
        struct { const char *key; uint64_t *out; } nums[] = {
                { "chunk_size", &m->chunk_size },
                { "stream_size", &m->stream_size },
                { "chunks", &m->chunks },
                { "payload_size", &m->payload_size },
        };
        for (size_t i = 0; i < ELEMENTSOF(nums); i++) {
                if (json_get_int64(o, nums[i].key, true, 0, INT64_MAX, &v) < 0)
                        return mf_fail(ret_error, "manifest: bad \"%s\"", nums[i].key);
                *nums[i].out = (uint64_t) v;
        }
        if (get_hex(o, "payload_blake2b", m->payload_digest, 64) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", "payload_blake2b");
        if (json_object_object_get_ex(o, "audit_key_sealed", NULL)) {
                if (get_hex(o, "audit_key_sealed", m->audit_key_sealed, ARCHIVE_SEALED_AUDIT_KEY_BYTES) < 0)
                        return mf_fail(ret_error, "manifest: bad \"%s\"", "audit_key_sealed");
                m->has_audit_key = true;
        }
        r = collection_parse(o, m, ret_error);
        if (r < 0)
                return r;
        if (json_get_array(o, "members", true, ARCHIVE_MEMBERS_MAX, &list) < 0)
                return seat_error_set(ret_error, EBADMSG, "manifest: \"members\" missing or more than %u",
                                      ARCHIVE_MEMBERS_MAX);
        m->n_members = json_object_array_length(list);
        if (m->n_members == 0)
                return mf_fail(ret_error, "manifest: %s", "no members");
        m->members = calloc(m->n_members, sizeof(ArchiveMember));
        if (!m->members)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        for (size_t i = 0; i < m->n_members; i++) {
                r = member_parse(json_object_array_get_idx(list, i), i, m->members + i, ret_error);
                if (r < 0)
                        return r;
        }
        r = manifest_check(m, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int archive_seal_audit_key(const SeatBoxPublicKey *facilitator, const uint8_t key[AUDIT_KEY_BYTES],
                           uint8_t ret_sealed[ARCHIVE_SEALED_AUDIT_KEY_BYTES]) {
        return seat_box_seal(facilitator, key, AUDIT_KEY_BYTES, ret_sealed);
}

/* ---- sealing -------------------------------------------------------------------- */

/*
 * Sealing runs as two stages on two threads: this one reads the inputs straight into the
 * chunk buffer, hashes each member (BLAKE2b-512) and encrypts a chunk into a free slot of a
 * small ring; a writer thread hashes each sealed chunk into the payload digest and writes
 * it. The two hashes cost more than the encryption itself, so on two cores this keeps
 * sealing near raw crypto_secretstream speed (tests/bench/bench-evidence.c).
 */
#define RING_SLOTS 8U
#define SLOT_SIZE (4U + CT_CHUNK_MAX)
#define WRITEBACK_WINDOW (8ULL << 20)

typedef struct Writer {
        pthread_t thread;
        bool running;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        uint8_t *slots;              /* RING_SLOTS × SLOT_SIZE */
        size_t len[RING_SLOTS];
        unsigned head, tail, count;  /* filled at head, written from tail */
        bool done;                   /* no more slots will come */
        int error;                   /* the first write failure, -errno */
        int fd;
        crypto_generichash_state *payload_hash;
        uint64_t *written;
        uint64_t synced;             /* payload bytes handed to writeback */
} Writer;

typedef struct Sealer {
        int fd;
        const char *path;
        crypto_secretstream_xchacha20poly1305_state *ss; /* sodium_malloc'd */
        crypto_generichash_state payload_hash;
        uint8_t *plain;      /* ARCHIVE_CHUNK_SIZE */
        size_t plain_len;
        uint64_t chunks_left;
        uint64_t written;    /* payload bytes */
        Writer w;
} Sealer;

static int write_failed(const Sealer *s, int r, SeatError **ret_error) {
        if (r == -ENOSPC || r == -EDQUOT)
                return seat_error_set(ret_error, ENOSPC,
                                      "disk full while sealing '%s': nothing was kept, free space and seal again",
                                      s->path);
        return seat_error_set(ret_error, -r, "cannot write archive '%s': %s", s->path, strerror(-r));
}

/* Before the ring runs: the sealed key and the stream header. */
static int sealer_write(Sealer *s, const void *buf, size_t len, SeatError **ret_error) {
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

static int writer_start(Sealer *s) {
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
static int writer_stop(Writer *w) {
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

static int sealer_flush(Sealer *s, SeatError **ret_error) {
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
static int sealer_feed(Sealer *s, const uint8_t *p, size_t len, SeatError **ret_error) {
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

static void octal(char *field, size_t width, uint64_t v) {
        /* width-1 octal digits (v fits: sizes are capped) and a NUL */
        field[width - 1] = '\0';
        for (size_t i = width - 1; i > 0; i--, v >>= 3)
                field[i - 1] = (char) ('0' + (v & 7));
}

static void tar_header(const ArchiveMember *a, int64_t mtime_s, uint8_t block[TAR_BLOCK]) {
        char *h = (char *) block;
        unsigned sum = 0;

        memset(block, 0, TAR_BLOCK);
        memcpy(h, a->path, strlen(a->path));            /* name */
        octal(h + 100, 8, 0600);                          /* mode */
        octal(h + 108, 8, 0);                             /* uid */
        octal(h + 116, 8, 0);                             /* gid */
        octal(h + 124, 12, a->size);                      /* size */
        octal(h + 136, 12, (uint64_t) MAX(mtime_s, 0));   /* mtime */
        memset(h + 148, ' ', 8);                          /* chksum, spaces while summing */
        h[156] = '0';                                     /* regular file */
        memcpy(h + 257, "ustar", 6);                      /* magic "ustar\0" */
        memcpy(h + 263, "00", 2);                         /* version */
        memcpy(h + 265, "seatd", 5);                      /* uname */
        memcpy(h + 297, "seatd", 5);                      /* gname */
        for (size_t i = 0; i < TAR_BLOCK; i++)
                sum += block[i];
        snprintf(h + 148, 8, "%06o", sum);                /* 6 digits, NUL, space */
        h[155] = ' ';
}

static int seal_member(Sealer *s, ArchiveMember *a, int in_fd, int64_t mtime_s, SeatError **ret_error) {
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

typedef struct SealInputs {
        int *fds;
        size_t n;
} SealInputs;

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

/* Manifest + signature as the archive's head: magic, lengths, bytes. */
static int build_head(const ArchiveManifest *m, const SeatSecretKey *sk, uint8_t **ret, size_t *ret_len,
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

static int seal_payload(Sealer *s, ArchiveManifest *m, const SeatBoxPublicKey *fac, SealInputs *in,
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

/* ---- reading -------------------------------------------------------------------- */

typedef struct Source {
        int fd;               /* or -1 with buf */
        const uint8_t *buf;
        size_t len, pos;
} Source;

/* 0, -EPIPE when the source ends first, -errno. */
static int src_read(Source *s, void *dst, size_t n) {
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

static int read_fail(SeatError **ret_error, int r, const char *what) {
        if (r == -EPIPE)
                return seat_error_set(ret_error, EPIPE, "the archive is truncated (in %s)", what);
        return seat_error_set(ret_error, -r, "cannot read the archive (%s): %s", what, strerror(-r));
}

static int read_block(Source *s, uint32_t min, uint32_t max, const char *what, uint8_t **ret, uint32_t *ret_len,
                      SeatError **ret_error) {
        uint8_t le[4];
        int r = src_read(s, le, 4);
        if (r < 0)
                return read_fail(ret_error, r, what);
        uint32_t n = get_le32(le);
        if (n < min || n > max)
                return seat_error_set(ret_error, EBADMSG, "the archive's %s length %" PRIu32 " is out of range (%" PRIu32
                                      "..%" PRIu32 ")", what, n, min, max);
        uint8_t *b = malloc((size_t) n + 1);
        if (!b)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        r = src_read(s, b, n);
        if (r < 0) {
                free(b);
                return read_fail(ret_error, r, what);
        }
        b[n] = 0;
        *ret = b;
        *ret_len = n;
        return 0;
}

/* Magic, manifest, signature; the manifest parsed and (with host) its signature checked. */
static int read_head(Source *s, const SeatPublicKey *host, ArchiveManifest **ret, SeatError **ret_error) {
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

static int check_expected(const ArchiveManifest *m, const char *seat, const char *session, SeatError **ret_error) {
        if (seat && strcmp(seat, m->seat) != 0)
                return seat_error_set(ret_error, EXDEV,
                                      "the archive is from seat '%s', not '%s': refused", m->seat, seat);
        if (session && strcmp(session, m->session) != 0)
                return seat_error_set(ret_error, EXDEV,
                                      "the archive is from session '%s', not '%s': refused", m->session, session);
        return 0;
}

/* ---- tar stream on open ---------------------------------------------------------- */

typedef struct TarReader {
        const ArchiveManifest *m;
        int dfd;
        int *fds;               /* one partial file per member */
        size_t member;          /* index of the current member, n_members in the trailer */
        enum { TAR_HEADER, TAR_DATA, TAR_PAD, TAR_TRAILER, TAR_DONE } phase;
        uint8_t block[TAR_BLOCK];
        size_t have;            /* bytes of block */
        uint64_t left;          /* data / pad / trailer bytes left */
        crypto_generichash_state h;
} TarReader;

static uint64_t parse_octal(const char *f, size_t width, bool *ok) {
        uint64_t v = 0;
        size_t i = 0;
        for (; i < width && f[i] >= '0' && f[i] <= '7'; i++)
                v = v * 8 + (uint64_t) (f[i] - '0');
        *ok = i > 0 && i < width && (f[i] == '\0' || f[i] == ' ');
        return v;
}

static int tar_check_header(TarReader *t, SeatError **ret_error) {
        const ArchiveMember *a = t->m->members + t->member;
        const char *h = (const char *) t->block;
        unsigned sum = 0;
        bool ok1, ok2;

        for (size_t i = 0; i < TAR_BLOCK; i++)
                sum += (i >= 148 && i < 156) ? ' ' : t->block[i];
        uint64_t want_sum = parse_octal(h + 148, 8, &ok1), size = parse_octal(h + 124, 12, &ok2);
        if (!ok1 || want_sum != sum || memcmp(h + 257, "ustar", 6) != 0 || h[156] != '0')
                return seat_error_set(ret_error, EBADMSG, "tar header of member %zu is malformed", t->member + 1);
        if (strnlen(h, 100) != strlen(a->path) || memcmp(h, a->path, strlen(a->path)) != 0)
                return seat_error_set(ret_error, EBADMSG, "tar member %zu is not named '%s' as the manifest says",
                                      t->member + 1, a->path);
        if (!ok2 || size != a->size)
                return seat_error_set(ret_error, EBADMSG, "tar member %zu ('%s') has another size than the manifest",
                                      t->member + 1, a->name);
        return 0;
}

static void tar_next_member(TarReader *t) {
        t->member++;
        t->have = 0;
        if (t->member == t->m->n_members) {
                t->phase = TAR_TRAILER;
                t->left = 2 * TAR_BLOCK;
        } else
                t->phase = TAR_HEADER;
}

static int tar_end_data(TarReader *t, SeatError **ret_error) {
        const ArchiveMember *a = t->m->members + t->member;
        uint8_t d[64];
        crypto_generichash_final(&t->h, d, sizeof(d));
        if (sodium_memcmp(d, a->digest, sizeof(d)) != 0)
                return seat_error_set(ret_error, EKEYREJECTED,
                                      "member %zu ('%s'): its BLAKE2b-512 does not match the manifest", t->member + 1,
                                      a->name);
        t->left = tar_padded(a->size) - a->size;
        t->phase = TAR_PAD;
        if (t->left == 0)
                tar_next_member(t);
        return 0;
}

static int tar_feed(TarReader *t, const uint8_t *p, size_t len, SeatError **ret_error) {
        int r;
        while (len > 0) {
                switch (t->phase) {
                case TAR_HEADER: {
                        size_t n = MIN(len, TAR_BLOCK - t->have);
                        memcpy(t->block + t->have, p, n);
                        t->have += n, p += n, len -= n;
                        if (t->have < TAR_BLOCK)
                                break;
                        r = tar_check_header(t, ret_error);
                        if (r < 0)
                                return r;
                        crypto_generichash_init(&t->h, NULL, 0, 64);
                        t->left = t->m->members[t->member].size;
                        t->phase = TAR_DATA;
                        if (t->left == 0) {
                                r = tar_end_data(t, ret_error);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                case TAR_DATA: {
                        size_t n = (size_t) MIN((uint64_t) len, t->left);
                        crypto_generichash_update(&t->h, p, n);
                        r = loop_write(t->fds[t->member], p, n);
                        if (r < 0)
                                return seat_error_set(ret_error, -r, "cannot write member %zu: %s", t->member + 1,
                                                      strerror(-r));
                        t->left -= n, p += n, len -= n;
                        if (t->left == 0) {
                                r = tar_end_data(t, ret_error);
                                if (r < 0)
                                        return r;
                        }
                        break;
                }
                case TAR_PAD:
                case TAR_TRAILER: {
                        size_t n = (size_t) MIN((uint64_t) len, t->left);
                        for (size_t i = 0; i < n; i++)
                                if (p[i] != 0)
                                        return seat_error_set(ret_error, EBADMSG,
                                                              "the tar stream has non-zero padding after member %zu",
                                                              t->member + (t->phase == TAR_PAD));
                        t->left -= n, p += n, len -= n;
                        if (t->left == 0) {
                                if (t->phase == TAR_PAD)
                                        tar_next_member(t);
                                else
                                        t->phase = TAR_DONE;
                        }
                        break;
                }
                case TAR_DONE:
                        return seat_error_set(ret_error, EBADMSG, "data after the end of the tar stream");
                }
        }
        return 0;
}

/* ---- payload walk (verify and open) ------------------------------------------------- */

typedef struct Opener {
        const SeatBoxSecretKey *fac;
        crypto_secretstream_xchacha20poly1305_state *ss; /* sodium_malloc'd */
        uint8_t *plain;
        TarReader *tar;
} Opener;

static int walk_payload(Source *s, const ArchiveManifest *m, Opener *op, SeatError **ret_error) {
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

static int verify_source(Source *s, const SeatPublicKey *host, const char *seat, const char *session,
                         ArchiveManifest **ret_manifest, SeatError **ret_error) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        int r = read_head(s, host, &m, ret_error);
        if (r < 0)
                return r;
        r = check_expected(m, seat, session, ret_error);
        if (r < 0)
                return r;
        r = walk_payload(s, m, NULL, ret_error);
        if (r < 0)
                return r;
        if (ret_manifest)
                *ret_manifest = TAKE_PTR(m);
        return 0;
}

static int open_archive_fd(const char *path, SeatError **ret_error) {
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

int archive_verify(const char *path, const SeatPublicKey *host, const char *expected_seat,
                   const char *expected_session, ArchiveManifest **ret_manifest, SeatError **ret_error) {
        if (!path || !host)
                return seat_error_set(ret_error, EINVAL, "verifying an archive needs its path and the host key");
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
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
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        _cleanup_close_ int fd = open_archive_fd(path, ret_error);
        if (fd < 0)
                return fd;
        Source s = { .fd = fd };
        int r = read_head(&s, host, ret_manifest, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "archive '%s'", path) : 0;
}

/* ---- open ------------------------------------------------------------------------ */

typedef struct Partials {
        int dfd;
        int *fds;
        size_t n;
        bool keep;  /* renamed into place: do not unlink */
} Partials;

static void partials_done(Partials *p) {
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

static int open_out_dir(const char *out_dir, SeatError **ret_error) {
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

static int partials_create(Partials *p, const ArchiveManifest *m, SeatError **ret_error) {
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

static int partials_commit(Partials *p, const ArchiveManifest *m, SeatError **ret_error) {
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
        if (signing_init() < 0)
                return seat_error_set(ret_error, EIO, "cannot initialise libsodium");
        _cleanup_close_ int fd = open_archive_fd(path, ret_error);
        if (fd < 0)
                return fd;
        Source s = { .fd = fd };
        int r = open_source(&s, host, facilitator, out_dir, ret_manifest, ret_error);
        return r < 0 ? seat_error_wrap(ret_error, "archive '%s'", path) : 0;
}
