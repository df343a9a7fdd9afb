/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* archive-manifest.c: the signed manifest: to JSON, described for people, and parsed back strictly. */
#include "archive-internal.h"

ArchiveManifest *archive_manifest_free(ArchiveManifest *m) {
        if (!m)
                return NULL;
        free(m->members);
        return mfree(m);
}

/* ---- manifest ------------------------------------------------------------------- */

static int add_hex(json_object *o, const char *key, const uint8_t *d, size_t n) {
        char hex[2 * 128 + 1];
        if (digest_to_hex(d, n, hex, sizeof(hex)) < 0)
                return -EINVAL;
        return json_add(o, key, json_object_new_string(hex));
}

static const ArchiveCount collection_counts[] = {
        { "files", offsetof(ArchiveCollection, files) },
        { "symlinks", offsetof(ArchiveCollection, symlinks) },
        { "bytes", offsetof(ArchiveCollection, bytes) },
        { "truncated", offsetof(ArchiveCollection, truncated) },
        { "skipped", offsetof(ArchiveCollection, skipped) },
        { "max_bytes", offsetof(ArchiveCollection, max_bytes) },
        { "max_file_bytes", offsetof(ArchiveCollection, max_file_bytes) },
        { "max_files", offsetof(ArchiveCollection, max_files) },
};

static const ArchiveCount capture_counts[] = {
        { "snaplen", offsetof(ArchiveCapture, snaplen) },
        { "max_bytes", offsetof(ArchiveCapture, max_bytes) },
        { "files", offsetof(ArchiveCapture, files) },
        { "bytes", offsetof(ArchiveCapture, bytes) },
        { "packets", offsetof(ArchiveCapture, packets) },
        { "bytes_on_wire", offsetof(ArchiveCapture, bytes_on_wire) },
        { "packets_cut", offsetof(ArchiveCapture, packets_cut) },
        { "bytes_cut", offsetof(ArchiveCapture, bytes_cut) },
        { "files_rotated", offsetof(ArchiveCapture, files_rotated) },
        { "packets_rotated", offsetof(ArchiveCapture, packets_rotated) },
        { "bytes_rotated", offsetof(ArchiveCapture, bytes_rotated) },
        { "packets_unwritten", offsetof(ArchiveCapture, packets_unwritten) },
        { "kernel_drops", offsetof(ArchiveCapture, kernel_drops) },
        { "restarts", offsetof(ArchiveCapture, restarts) },
};

int archive_counts_to_json(json_object *o, const ArchiveCount *counts, size_t n, const void *base) {
        int r = 0;
        for (size_t i = 0; i < n; i++) {
                const uint64_t *v = (const uint64_t *) ((const char *) base + counts[i].offset);
                r |= json_add(o, counts[i].key, json_object_new_int64((int64_t) *v));
        }
        return r != 0 ? -ENOMEM : 0;
}

const char *archive_counts_parse(json_object *o, const ArchiveCount *counts, size_t n, char *const *skip,
                                 void *base) {
        for (size_t i = 0; i < n; i++) {
                int64_t v;
                if (strv_contains(skip, counts[i].key))
                        continue;
                if (json_get_int64(o, counts[i].key, true, 0, (int64_t) ARCHIVE_COUNT_MAX, &v) < 0)
                        return counts[i].key;
                *(uint64_t *) ((char *) base + counts[i].offset) = (uint64_t) v;
        }
        return NULL;
}

const char *archive_capture_counts_parse(json_object *o, bool with_files, ArchiveCapture *c) {
        static char *const on_disk[] = { "files", "bytes", NULL };
        return archive_counts_parse(o, capture_counts, ELEMENTSOF(capture_counts), with_files ? NULL : on_disk, c);
}

bool archive_capture_is_complete(const ArchiveCapture *c) {
        return c->packets_cut == 0 && c->files_rotated == 0 && c->packets_rotated == 0 && c->packets_unwritten == 0 &&
               c->kernel_drops == 0 && c->restarts == 0 && !c->reason[0];
}

/* "guest" and "capture" are written alike: "complete", their counts, then the reason if any. */
static int counted_to_json(bool complete, const ArchiveCount *counts, size_t n_counts, const void *section,
                           const char *reason, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        int r = 0;
        if (!o)
                return -ENOMEM;
        r |= json_add(o, "complete", json_object_new_boolean(complete));
        r |= archive_counts_to_json(o, counts, n_counts, section);
        if (reason[0])
                r |= json_add(o, "reason", json_object_new_string(reason));
        if (r != 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int capture_to_json(const ArchiveCapture *c, json_object **ret) {
        return counted_to_json(c->complete, capture_counts, ELEMENTSOF(capture_counts), c, c->reason, ret);
}

static int collection_to_json(const ArchiveCollection *c, json_object **ret) {
        return counted_to_json(c->complete, collection_counts, ELEMENTSOF(collection_counts), c, c->reason, ret);
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
        if (m->has_capture) {
                json_object *c = NULL;
                r |= capture_to_json(&m->capture, &c) < 0 ? 1 : json_add(o, "capture", c);
        }
        if (json_add(o, "members", list) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_members; i++) {
                const ArchiveMember *a = m->members + i;
                json_object *e = json_object_new_object();
                if (json_append(list, e) < 0)
                        return -ENOMEM;
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
        if (m->has_capture) {
                const ArchiveCapture *c = &m->capture;
                fprintf(f, "capture: %s: %" PRIu64 " file(s), %" PRIu64 " bytes of %" PRIu64 " packet(s) seen; %" PRIu64
                        " packet(s) cut at snaplen %" PRIu64 " (%" PRIu64 " bytes), %" PRIu64 " file(s) rotated away (%" PRIu64
                        " packets), %" PRIu64 " dropped by the kernel, %" PRIu64 " unwritten, %" PRIu64
                        " seatd restart(s) (cap: %" PRIu64 " bytes)\n", c->complete ? "complete" : "INCOMPLETE", c->files,
                        c->bytes, c->packets, c->packets_cut, c->snaplen, c->bytes_cut, c->files_rotated, c->packets_rotated,
                        c->kernel_drops, c->packets_unwritten, c->restarts, c->max_bytes);
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

int manifest_format(const ArchiveManifest *m, char **ret, size_t *ret_len) {
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

bool image_ok(const char *s) {
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

/* The start of "guest" or "capture" (key): 0 when the manifest has none, 1 with *ret_g
 * and *ret_complete set, or -EBADMSG. */
static int counted_parse_begin(json_object *o, const char *key, json_object **ret_g, bool *ret_complete,
                               SeatError **ret_error) {
        if (!json_object_object_get_ex(o, key, ret_g))
                return 0;
        if (!json_object_is_type(*ret_g, json_type_object) || json_get_bool(*ret_g, "complete", true, ret_complete) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", key);
        return 1;
}

/* The optional reason of "guest" or "capture" (what: its name in messages), printable
 * ASCII of at most ARCHIVE_REASON_MAX bytes; "" when absent. */
static int counted_parse_reason(json_object *g, const char *what, char ret_reason[static ARCHIVE_REASON_MAX + 1],
                                SeatError **ret_error) {
        const char *reason = NULL;
        if (json_get_string(g, "reason", false, ARCHIVE_REASON_MAX, &reason) < 0)
                return mf_fail(ret_error, "manifest: bad \"%s\"", what);
        for (const char *p = reason; p && *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        return mf_fail(ret_error, "manifest: bad \"%s\"", what);
        snprintf(ret_reason, ARCHIVE_REASON_MAX + 1, "%s", reason ? reason : "");
        return 0;
}

static int collection_parse(json_object *o, ArchiveManifest *m, SeatError **ret_error) {
        json_object *g = NULL;
        ArchiveCollection *c = &m->collection;
        int r = counted_parse_begin(o, "guest", &g, &c->complete, ret_error);
        if (r <= 0)
                return r;
        const char *bad = archive_counts_parse(g, collection_counts, ELEMENTSOF(collection_counts), NULL, c);
        if (bad)
                return seat_error_set(ret_error, EBADMSG, "manifest: bad \"guest\".\"%s\"", bad);
        r = counted_parse_reason(g, "guest.reason", c->reason, ret_error);
        if (r < 0)
                return r;
        if (c->complete != (c->truncated == 0 && c->skipped == 0 && !c->reason[0]))
                return mf_fail(ret_error, "manifest: %s", "\"guest\".\"complete\" contradicts its counts");
        m->has_collection = true;
        return 0;
}

static int capture_parse(json_object *o, ArchiveManifest *m, SeatError **ret_error) {
        json_object *g = NULL;
        ArchiveCapture *c = &m->capture;
        int r = counted_parse_begin(o, "capture", &g, &c->complete, ret_error);
        if (r <= 0)
                return r;
        const char *bad = archive_capture_counts_parse(g, true, c);
        if (bad)
                return seat_error_set(ret_error, EBADMSG, "manifest: bad \"capture\".\"%s\"", bad);
        r = counted_parse_reason(g, "capture.reason", c->reason, ret_error);
        if (r < 0)
                return r;
        if (c->complete != archive_capture_is_complete(c))
                return mf_fail(ret_error, "manifest: %s", "\"capture\".\"complete\" contradicts its counts");
        if (c->packets_cut > c->packets || c->bytes_cut > c->bytes_on_wire)
                return mf_fail(ret_error, "manifest: %s", "\"capture\" cuts more than it saw");
        m->has_capture = true;
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
        if (m->has_capture) {
                uint64_t files = 0, bytes = 0;
                for (size_t i = 0; i < m->n_members; i++)
                        if (strcmp(m->members[i].role, "capture") == 0) {
                                files++;
                                bytes += m->members[i].size;
                        }
                if (files != m->capture.files || bytes != m->capture.bytes)
                        return mf_fail(ret_error, "manifest: %s",
                                       "\"capture\".\"files\" and \"bytes\" do not count the capture members");
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
        r = capture_parse(o, m, ret_error);
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
