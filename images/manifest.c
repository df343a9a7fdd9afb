/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/jsonframe.h"
#include "manifest.h"

#define CMDLINE_MAX 4096
#define VERSION_MAX ((int64_t) 1 << 53)

bool image_name_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > IMAGE_NAME_MAX || !strchr("abcdefghijklmnopqrstuvwxyz0123456789", name[0]))
                return false;
        return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

bool image_file_name_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > IMAGE_FILE_NAME_MAX || name[0] == '.')
                return false;
        return strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

const char *image_format_to_string(ImageFormat f) {
        return f == IMAGE_FORMAT_QCOW2 ? "qcow2" : "raw";
}

const char *image_role_to_string(ImageFileRole r) {
        return r == IMAGE_ROLE_KERNEL ? "kernel" : r == IMAGE_ROLE_INITRD ? "initrd" : "disk";
}

int rfc3339_parse(const char *s, int64_t *ret) {
        struct tm tm = {};
        int consumed = 0;

        if (strlen(s) != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
            s[19] != 'Z')
                return -EINVAL;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                   &tm.tm_sec, &consumed) != 6 || consumed != 20)
                return -EINVAL;
        if (tm.tm_year < 1970 || tm.tm_year > 9999 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
            tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        int year = tm.tm_year, mon = tm.tm_mon, mday = tm.tm_mday;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        /* timegm normalises 31 February into March: refuse dates that do not exist. */
        struct tm back;
        if (t == (time_t) -1 || !gmtime_r(&t, &back) || back.tm_year + 1900 != year || back.tm_mon + 1 != mon ||
            back.tm_mday != mday)
                return -EINVAL;
        *ret = (int64_t) t;
        return 0;
}

int rfc3339_format(int64_t t, char *buf, size_t size) {
        time_t tt = (time_t) t;
        struct tm tm;
        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return -EINVAL;
        return 0;
}

static void image_file_done(ImageFile *f) {
        free(f->name);
        free(f->chunks);
}

ImageManifest *image_manifest_free(ImageManifest *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_files; i++)
                image_file_done(&m->files[i]);
        FREE_MANY(m->name, m->kernel, m->initrd, m->cmdline, m->files, m->guest_init_filesystem, m->guest_init_path,
                  m->egress_profile);
        strv_free(m->evidence_paths);
        return mfree(m);
}

const ImageFile *image_manifest_find_file(const ImageManifest *m, const char *name) {
        for (size_t i = 0; i < m->n_files; i++)
                if (!strcmp(m->files[i].name, name))
                        return &m->files[i];
        return NULL;
}

/* Refuse any key not in allowed: a misspelt field must not pass silently. */
static int only_keys(json_object *o, const char *const *allowed, const char *where, SeatError **ret_error) {
        json_object_object_foreach(o, key, val) {
                (void) val;
                bool ok = false;
                for (const char *const *a = allowed; *a; a++)
                        ok = ok || !strcmp(key, *a);
                if (!ok) {
                        char safe[80];
                        size_t i = 0;
                        for (const char *p = key; *p && i + 1 < sizeof(safe); p++)
                                safe[i++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
                        safe[i] = '\0';
                        return seat_error_set(ret_error, EINVAL, "manifest: unknown field '%s' in %s", safe, where);
                }
        }
        return 0;
}

static int field_error(int r, const char *field, SeatError **ret_error) {
        if (r == -ENOMEM)
                return seat_error_set(ret_error, ENOMEM, "out of memory");
        if (r == -ENOENT)
                return seat_error_set(ret_error, EINVAL, "manifest: missing field '%s'", field);
        return seat_error_set(ret_error, EINVAL, "manifest: field '%s' has the wrong type or an invalid value", field);
}

static int dup_string(json_object *o, const char *key, bool required, size_t max, char **ret, SeatError **ret_error) {
        const char *s = NULL;
        int r = json_get_string(o, key, required, max, &s);
        if (r < 0)
                return field_error(r, key, ret_error);
        if (!s)
                return 0;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return seat_error_set(ret_error, EINVAL, "manifest: control character in field '%s'", key);
        *ret = strdup(s);
        return *ret ? 0 : field_error(-ENOMEM, key, ret_error);
}

static int get_int(json_object *o, const char *key, bool required, int64_t min, int64_t max, int64_t *ret,
                   SeatError **ret_error) {
        int r = json_get_int64(o, key, required, min, max, ret);
        return r < 0 ? field_error(r, key, ret_error) : 0;
}

static int get_time(json_object *o, const char *key, int64_t *ret, SeatError **ret_error) {
        const char *s = NULL;
        int r = json_get_string(o, key, true, 32, &s);
        if (r < 0)
                return field_error(r, key, ret_error);
        if (rfc3339_parse(s, ret) < 0)
                return seat_error_set(ret_error, EINVAL, "manifest: field '%s' must be a time like 2027-01-31T12:00:00Z", key);
        return 0;
}

static int parse_chunks(json_object *f, ImageFile *file, SeatError **ret_error) {
        json_object *chunks = NULL;
        const char *hex = NULL;
        size_t expect = file->size == 0 ? 0 : (size_t) ((file->size - 1) / file->chunk_size + 1);

        int r = json_get_array(f, "chunks", true, expect, &chunks);
        if (r < 0 || json_object_array_length(chunks) != expect)
                return seat_error_set(ret_error, EINVAL, "manifest: file '%s' must list %zu chunk digests", file->name, expect);
        file->n_chunks = expect;
        file->chunks = calloc(expect ? expect : 1, SEAT_HASH_BYTES);
        if (!file->chunks)
                return -ENOMEM;
        for (size_t i = 0; i < expect; i++) {
                json_object *c = json_object_array_get_idx(chunks, i);
                if (!json_object_is_type(c, json_type_string) ||
                    digest_from_hex(json_object_get_string(c), (size_t) json_object_get_string_len(c), file->chunks[i],
                                    SEAT_HASH_BYTES) < 0)
                        return seat_error_set(ret_error, EINVAL, "manifest: chunk %zu of '%s' is not a 128-digit hex digest", i,
                                              file->name);
        }
        r = json_get_string(f, "identity", true, SEAT_HASH_HEX_LEN, &hex);
        uint8_t identity[SEAT_HASH_BYTES];
        if (r < 0 || digest_from_hex(hex, strlen(hex), file->identity, SEAT_HASH_BYTES) < 0)
                return seat_error_set(ret_error, EINVAL, "manifest: file '%s' needs a hex 'identity'", file->name);
        /* The identity is a function of the chunk list: check it agrees. */
        if (blake2b_buffer(file->chunks, expect * SEAT_HASH_BYTES, identity) < 0 ||
            memcmp(identity, file->identity, SEAT_HASH_BYTES) != 0)
                return seat_error_set(ret_error, EBADMSG, "manifest: the identity of '%s' does not match its chunk digests",
                                      file->name);
        return 0;
}

static int parse_file(json_object *f, ImageFile *file, SeatError **ret_error) {
        static const char *const keys[] = { "name", "role", "format", "size", "chunk_size", "chunks", "identity", NULL };
        const char *role = NULL, *format = NULL;
        int64_t size = 0, chunk = 0;
        int r;

        if (!json_object_is_type(f, json_type_object))
                return seat_error_set(ret_error, EINVAL, "manifest: 'files' entries must be objects");
        if ((r = only_keys(f, keys, "a file entry", ret_error)) < 0 ||
            (r = dup_string(f, "name", true, IMAGE_FILE_NAME_MAX, &file->name, ret_error)) < 0)
                return r;
        if (!image_file_name_valid(file->name))
                return seat_error_set(ret_error, EINVAL, "manifest: file name '%s' must be a plain name ([A-Za-z0-9._-], no leading dot)",
                                      file->name);
        if (json_get_string(f, "role", true, 16, &role) < 0 || json_get_string(f, "format", true, 16, &format) < 0)
                return seat_error_set(ret_error, EINVAL, "manifest: file '%s' needs 'role' and 'format'", file->name);
        if (!strcmp(role, "disk"))
                file->role = IMAGE_ROLE_DISK;
        else if (!strcmp(role, "kernel"))
                file->role = IMAGE_ROLE_KERNEL;
        else if (!strcmp(role, "initrd"))
                file->role = IMAGE_ROLE_INITRD;
        else
                return seat_error_set(ret_error, EINVAL, "manifest: role of '%s' must be disk, kernel or initrd", file->name);
        if (!strcmp(format, "raw"))
                file->format = IMAGE_FORMAT_RAW;
        else if (!strcmp(format, "qcow2"))
                file->format = IMAGE_FORMAT_QCOW2;
        else
                return seat_error_set(ret_error, EINVAL, "manifest: format of '%s' must be raw or qcow2", file->name);
        if (file->role != IMAGE_ROLE_DISK && file->format != IMAGE_FORMAT_RAW)
                return seat_error_set(ret_error, EINVAL, "manifest: a %s must be raw", role);
        if ((r = get_int(f, "size", true, 1, (int64_t) 1 << 50, &size, ret_error)) < 0 ||
            (r = get_int(f, "chunk_size", true, IMAGE_CHUNK_MIN, SEAT_CHUNK_SIZE_MAX, &chunk, ret_error)) < 0)
                return r;
        if (chunk & (chunk - 1))
                return seat_error_set(ret_error, EINVAL, "manifest: chunk_size of '%s' must be a power of two", file->name);
        file->size = (uint64_t) size;
        file->chunk_size = (size_t) chunk;
        if ((file->size - 1) / file->chunk_size + 1 > (1u << 20))
                return seat_error_set(ret_error, EINVAL, "manifest: '%s' has more than 2^20 chunks", file->name);
        return parse_chunks(f, file, ret_error);
}

static int parse_files(json_object *o, ImageManifest *m, SeatError **ret_error) {
        json_object *files = NULL;
        bool have_disk = false;
        int r = json_get_array(o, "files", true, IMAGE_FILES_MAX, &files);
        if (r < 0 || json_object_array_length(files) == 0)
                return seat_error_set(ret_error, EINVAL, "manifest: 'files' must list 1 to %d files", IMAGE_FILES_MAX);
        size_t n = json_object_array_length(files);
        m->files = calloc(n, sizeof(ImageFile));
        if (!m->files)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                m->n_files = i + 1;
                r = parse_file(json_object_array_get_idx(files, i), &m->files[i], ret_error);
                if (r < 0)
                        return r;
                for (size_t j = 0; j < i; j++)
                        if (!strcmp(m->files[j].name, m->files[i].name))
                                return seat_error_set(ret_error, EINVAL, "manifest: file '%s' is listed twice", m->files[i].name);
                have_disk = have_disk || m->files[i].role == IMAGE_ROLE_DISK;
        }
        if (!have_disk)
                return seat_error_set(ret_error, EINVAL, "manifest: no file has role 'disk'");
        return 0;
}

static int check_boot_file(ImageManifest *m, const char *name, ImageFileRole role, SeatError **ret_error) {
        const ImageFile *f = image_manifest_find_file(m, name);
        if (!f || f->role != role)
                return seat_error_set(ret_error, EINVAL, "manifest: boot names '%s' but no file of role %s has that name",
                                      name, image_role_to_string(role));
        return 0;
}

static int parse_boot(json_object *o, ImageManifest *m, SeatError **ret_error) {
        static const char *const keys[] = { "mode", "kernel", "initrd", "cmdline", "memory_mib", "vcpus", NULL };
        json_object *b = NULL;
        const char *mode = NULL;
        int r;

        if (json_get_object(o, "boot", true, &b) < 0)
                return seat_error_set(ret_error, EINVAL, "manifest: 'boot' must be an object");
        if ((r = only_keys(b, keys, "'boot'", ret_error)) < 0)
                return r;
        if (json_get_string(b, "mode", true, 16, &mode) < 0 || (strcmp(mode, "direct") && strcmp(mode, "disk")))
                return seat_error_set(ret_error, EINVAL, "manifest: boot.mode must be \"direct\" or \"disk\"");
        m->direct_boot = !strcmp(mode, "direct");
        m->memory_mib = 256;
        m->vcpus = 1;
        if ((r = dup_string(b, "kernel", m->direct_boot, IMAGE_FILE_NAME_MAX, &m->kernel, ret_error)) < 0 ||
            (r = dup_string(b, "initrd", false, IMAGE_FILE_NAME_MAX, &m->initrd, ret_error)) < 0 ||
            (r = dup_string(b, "cmdline", false, CMDLINE_MAX, &m->cmdline, ret_error)) < 0 ||
            (r = get_int(b, "memory_mib", false, 64, 1048576, &m->memory_mib, ret_error)) < 0 ||
            (r = get_int(b, "vcpus", false, 1, 256, &m->vcpus, ret_error)) < 0)
                return r;
        if (!m->direct_boot && (m->kernel || m->initrd || m->cmdline))
                return seat_error_set(ret_error, EINVAL, "manifest: kernel, initrd and cmdline need boot.mode \"direct\"");
        if (m->kernel && (r = check_boot_file(m, m->kernel, IMAGE_ROLE_KERNEL, ret_error)) < 0)
                return r;
        if (m->initrd && (r = check_boot_file(m, m->initrd, IMAGE_ROLE_INITRD, ret_error)) < 0)
                return r;
        return 0;
}

static int parse_guest_init(json_object *o, ImageManifest *m, SeatError **ret_error) {
        static const char *const keys[] = { "filesystem", "path", NULL };
        json_object *g = NULL;
        int r = json_get_object(o, "guest_init", false, &g);
        if (r < 0)
                return field_error(r, "guest_init", ret_error);
        if (!g)
                return 0;
        if ((r = only_keys(g, keys, "'guest_init'", ret_error)) < 0 ||
            (r = dup_string(g, "filesystem", true, 256, &m->guest_init_filesystem, ret_error)) < 0 ||
            (r = dup_string(g, "path", true, 4096, &m->guest_init_path, ret_error)) < 0)
                return r;
        if (m->guest_init_path[0] != '/' || m->guest_init_filesystem[0] != '/')
                return seat_error_set(ret_error, EINVAL, "manifest: guest_init paths must be absolute");
        return 0;
}

/* Absolute, and no component that is empty, "." or "..": "/root/.." and "/.." too (the
 * collector copies what the path names, and a guest-side path walks nowhere else). */
static bool plain_absolute_path(const char *p) {
        if (p[0] != '/')
                return false;
        for (const char *c = p + 1;;) {
                size_t n = strcspn(c, "/");
                if (n == 0 && c[0] == '\0')
                        return c != p + 1; /* "/" itself is not plain either */
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                if (c[n] == '\0')
                        return true;
                c += n + 1;
        }
}

int image_manifest_parse(const char *buf, size_t len, ImageManifest **ret, SeatError **ret_error) {
        static const char *const keys[] = { "format", "format_version", "name", "version", "created", "expires",
                                            "agent_protocol", "boot", "files", "guest_init", "evidence_paths",
                                            "egress_profile", NULL };
        _cleanup_(image_manifest_freep) ImageManifest *m = calloc(1, sizeof(*m));
        _cleanup_json_ json_object *o = NULL;
        const char *format = NULL;
        int64_t format_version = 0;
        int r;

        if (!m)
                return -ENOMEM;
        if (len > IMAGE_MANIFEST_MAX)
                return seat_error_set(ret_error, EFBIG, "manifest is larger than %u bytes", IMAGE_MANIFEST_MAX);
        size_t n = len;
        while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
                n--;
        if (json_frame_parse(buf, n, 8, &o) < 0)
                return seat_error_set(ret_error, EINVAL, "manifest is not one JSON object in valid UTF-8");
        if ((r = only_keys(o, keys, "the manifest", ret_error)) < 0)
                return r;
        if (json_get_string(o, "format", true, 32, &format) < 0 || strcmp(format, "seatd-image") ||
            json_get_int64(o, "format_version", true, 0, 1000, &format_version) < 0)
                return seat_error_set(ret_error, EINVAL, "not a seatd image manifest (format \"seatd-image\" expected)");
        if (format_version != 1)
                return seat_error_set(ret_error, EPROTONOSUPPORT, "manifest format_version %lld is not supported (1 is)",
                                      (long long) format_version);
        if ((r = dup_string(o, "name", true, IMAGE_NAME_MAX, &m->name, ret_error)) < 0)
                return r;
        if (!image_name_valid(m->name))
                return seat_error_set(ret_error, EINVAL, "manifest: name '%s' must match [a-z0-9][a-z0-9._-]{0,63}", m->name);
        if ((r = get_int(o, "version", true, 1, VERSION_MAX, &m->version, ret_error)) < 0 ||
            (r = get_time(o, "created", &m->created, ret_error)) < 0 ||
            (r = get_time(o, "expires", &m->expires, ret_error)) < 0 ||
            (r = get_int(o, "agent_protocol", true, 1, 1000, &m->agent_protocol, ret_error)) < 0)
                return r;
        if (m->expires <= m->created)
                return seat_error_set(ret_error, EINVAL, "manifest: 'expires' is not after 'created'");
        if ((r = parse_files(o, m, ret_error)) < 0 || (r = parse_boot(o, m, ret_error)) < 0 ||
            (r = parse_guest_init(o, m, ret_error)) < 0)
                return r;
        r = json_get_strv(o, "evidence_paths", false, IMAGE_EVIDENCE_PATHS_MAX, 4096, &m->evidence_paths);
        if (r < 0)
                return field_error(r, "evidence_paths", ret_error);
        for (char **p = m->evidence_paths; p && *p; p++)
                if (!plain_absolute_path(*p))
                        return seat_error_set(ret_error, EINVAL, "manifest: evidence path '%s' must be absolute and plain", *p);
        if ((r = dup_string(o, "egress_profile", false, 64, &m->egress_profile, ret_error)) < 0)
                return r;
        if (blake2b_buffer(buf, len, m->digest) < 0)
                return -EIO;
        *ret = TAKE_PTR(m);
        return 0;
}

static json_object *hex_string(const uint8_t *d, size_t len) {
        char hex[2 * SEAT_HASH_BYTES + 1];
        if (digest_to_hex(d, len, hex, sizeof(hex)) < 0)
                return NULL;
        return json_object_new_string(hex);
}

int image_manifest_to_json(const ImageManifest *m, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *disks = json_object_new_array();
        char created[32], expires[32];

        if (!o || !disks || rfc3339_format(m->created, created, sizeof(created)) < 0 ||
            rfc3339_format(m->expires, expires, sizeof(expires)) < 0)
                return -ENOMEM;
        json_object_object_add(o, "name", json_object_new_string(m->name));
        json_object_object_add(o, "version", json_object_new_int64(m->version));
        json_object_object_add(o, "created", json_object_new_string(created));
        json_object_object_add(o, "expires", json_object_new_string(expires));
        json_object_object_add(o, "digest", hex_string(m->digest, SEAT_HASH_BYTES));
        if (m->key_id[0])
                json_object_object_add(o, "key_id", json_object_new_string(m->key_id));
        for (size_t i = 0; i < m->n_files; i++) {
                const ImageFile *f = &m->files[i];
                json_object *d = json_object_new_object();
                if (json_append(disks, d) < 0)
                        return -ENOMEM;
                json_object_object_add(d, "file", json_object_new_string(f->name));
                json_object_object_add(d, "role", json_object_new_string(image_role_to_string(f->role)));
                json_object_object_add(d, "format", json_object_new_string(image_format_to_string(f->format)));
                json_object_object_add(d, "size", json_object_new_int64((int64_t) f->size));
                json_object_object_add(d, "identity", hex_string(f->identity, SEAT_HASH_BYTES));
        }
        json_object_object_add(o, "disks", TAKE_PTR(disks));
        *ret = TAKE_PTR(o);
        return 0;
}
