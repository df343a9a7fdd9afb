/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "evidence/archive.h"
#include "collect.h"
#include "common/fileio.h"
#include "images/guest-files.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "recording.h"
#include "seal.h"
#include "seat-log.h"
#include "network/capture-ring.h"

#define SESSION_INFO_MAX (256U * 1024U)
#define PRE_SEGMENTS_MAX 16
#define GUEST_STAGING "guest"

/* ---- session.json ---- */

int seal_write_session_info(const char *qdir, const SealSessionInfo *info, SeatError **ret_error) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *paths = json_object_new_array();
        _cleanup_free_ char *path = NULL, *text = NULL;
        size_t len = 0;
        if (!o || !paths || asprintf(&path, "%s/" SEAL_SESSION_INFO, qdir) < 0) {
                json_object_put(paths);
                return -ENOMEM;
        }
        json_object_object_add(o, "seat", json_object_new_string(info->seat_id));
        json_object_object_add(o, "generation", json_object_new_int64(info->generation));
        json_object_object_add(o, "image", json_object_new_string(info->image ? info->image : ""));
        json_object_object_add(o, "image_digest", json_object_new_string(info->image_digest ? info->image_digest : ""));
        if (info->filesystem)
                json_object_object_add(o, "filesystem", json_object_new_string(info->filesystem));
        for (char *const *p = info->evidence_paths; p && *p; p++)
                json_object_array_add(paths, json_object_new_string(*p));
        json_object_object_add(o, "evidence_paths", paths);
        int r = json_frame_format(o, SESSION_INFO_MAX, &text, &len);
        if (r >= 0)
                r = write_file_atomic(path, text, len, 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "write '%s': %s", path, strerror(-r));
        return 0;
}

typedef struct SessionInfo {
        json_object *json;
        const char *seat, *image_digest, *filesystem;
        int64_t generation;
        char **paths;
} SessionInfo;

static void session_info_done(SessionInfo *i) {
        free(i->paths);           /* the strings belong to json */
        json_object_put(i->json);
}

static int read_session_info(const char *qdir, SessionInfo *ret, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_object *list = NULL;
        size_t len = 0;
        if (asprintf(&path, "%s/" SEAL_SESSION_INFO, qdir) < 0)
                return -ENOMEM;
        int r = read_file_capped(path, SESSION_INFO_MAX, &text, &len);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot read '%s': %s", path, strerror(-r));
        if (json_frame_parse(text, len, 4, &ret->json) < 0 ||
            json_get_string(ret->json, "seat", true, ARCHIVE_SEAT_ID_MAX, &ret->seat) < 0 ||
            json_get_int64(ret->json, "generation", true, 1, INT64_MAX, &ret->generation) < 0 ||
            json_get_string(ret->json, "image_digest", true, ARCHIVE_IMAGE_MAX, &ret->image_digest) < 0 ||
            json_get_string(ret->json, "filesystem", false, 4096, &ret->filesystem) < 0 ||
            json_get_array(ret->json, "evidence_paths", true, 64, &list) < 0)
                return seat_error_set(ret_error, EBADMSG, "'%s' is damaged: seal this session by hand (seat-evidence seal)",
                                      path);
        size_t n = json_object_array_length(list);
        ret->paths = calloc(n + 1, sizeof(char *));
        if (!ret->paths)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(list, i);
                if (!json_object_is_type(e, json_type_string))
                        return seat_error_set(ret_error, EBADMSG, "'%s': evidence_paths holds a non-string", path);
                ret->paths[i] = (char *) json_object_get_string(e);
        }
        return 0;
}

bool seal_dir_is_pending(const char *qdir) {
        _cleanup_free_ char *p = NULL;
        return asprintf(&p, "%s/" SEAL_SESSION_INFO, qdir) >= 0 && access(p, F_OK) == 0;
}

char *seal_dir_failure(const char *qdir) {
        _cleanup_free_ char *p = NULL;
        char *text = NULL;
        size_t len = 0;
        if (asprintf(&p, "%s/" SEAL_FAILED_NOTE, qdir) < 0 || read_file_capped(p, 4096, &text, &len) < 0)
                return NULL;
        while (len > 0 && text[len - 1] == '\n')
                text[--len] = '\0';
        return text;
}

/* ---- removal of what seatd itself put there ---- */

static int remove_dir(const char *path, unsigned depth) {
        return remove_tree_at(AT_FDCWD, path, depth);
}

/* ---- the guest's files ---- */

typedef struct GuestPart {
        GuestFiles *files;
        ArchiveCollection summary;
        char *index_path;         /* an index of our own when the disk could not be read */
} GuestPart;

static void guest_part_done(GuestPart *g) {
        guest_files_free(g->files);
        free(g->index_path);
}

/* The guest's disk may be unreadable (it is the guest's to break: a filesystem that does not
 * mount, one that crashes or hangs the appliance): that is evidence too, sealed as an
 * incomplete collection with the reason in the signed manifest and in the index. Anything
 * else (the collector cannot be started, the host's disk) fails the seal. */
static int guest_unreadable(const char *staging, const char *why, GuestPart *g, SeatError **ret_error) {
        _cleanup_free_ char *esc = log_escape(why, strlen(why), ARCHIVE_REASON_MAX - 40);
        _cleanup_free_ char *text = NULL;
        if (asprintf(&g->index_path, "%s/index.txt", staging) < 0 ||
            asprintf(&text, "# the guest's files could not be read: %s\n", esc ? esc : "?") < 0)
                return -ENOMEM;
        (void) unlink(g->index_path);
        int r = write_file_atomic(g->index_path, text, strlen(text), 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot write '%s': %s", g->index_path, strerror(-r));
        g->summary.complete = false;
        snprintf(g->summary.reason, sizeof(g->summary.reason), "%s", esc ? esc : "unreadable");
        for (char *p = g->summary.reason; *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        *p = '?';
        return 0;
}

static int collect_guest(const SealContext *ctx, const char *qdir, const SessionInfo *info, GuestPart *g,
                         SeatError **ret_error) {
        const SeatConfig *c = ctx->config;
        _cleanup_free_ char *overlay = NULL, *staging = NULL, *cache = NULL, *context = NULL;
        if (asprintf(&overlay, "%s/overlay.qcow2", qdir) < 0 || asprintf(&staging, "%s/" GUEST_STAGING, qdir) < 0 ||
            asprintf(&cache, "%s/guestfs-cache", c->state_dir) < 0 ||
            asprintf(&context, "collect the guest files of seat '%s' generation %" PRId64, info->seat, info->generation) < 0)
                return -ENOMEM;
        g->summary = (ArchiveCollection) { .complete = true, .max_bytes = c->evidence_max_bytes,
                                           .max_file_bytes = c->evidence_max_file_bytes,
                                           .max_files = (uint64_t) c->evidence_max_files };
        if (access(overlay, F_OK) < 0) {
                log_seat_warning(info->seat, "%s: the session's disk is not in '%s': sealing without it", context,
                                 qdir);
                return 0;
        }
        /* Import makes it only when it inspects images (inspect_images). */
        if (mkdir(cache, 0711) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "cannot make the libguestfs cache '%s': %m", cache);
        int r = remove_dir(staging, 1); /* a failed attempt's copies */
        if (r < 0 || mkdir(staging, 0700) < 0)
                return seat_error_set(ret_error, r < 0 ? -r : errno, "cannot make '%s': %s", staging,
                                      strerror(r < 0 ? -r : errno));
        /* The collector reaches the overlay and its staging by name: the session's directory
         * is passable, nothing in it readable but what it is handed. */
        if (chmod(qdir, 0711) < 0)
                return seat_error_set(ret_error, errno, "chmod '%s': %m", qdir);
        CollectRequest req = {
                .helper = collect_helper_path(), .user = c->evidence_collect_user, .disk = overlay,
                .filesystem = info->filesystem, .paths = info->paths, .staging = staging, .cache_dir = cache,
                .context = context, .force_tcg = c->accel == SEAT_ACCEL_TCG, .timeout_s = (int) c->evidence_collect_timeout,
                .limits = { .max_bytes = c->evidence_max_bytes, .max_file_bytes = c->evidence_max_file_bytes,
                            .max_files = (uint64_t) c->evidence_max_files },
        };
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *reason = NULL;
        r = collect_run(&req, &g->files, &reason, &err);
        if (r > 0) {
                log_seat_warning(info->seat, "%s: %s (sealed as incomplete)", context, reason);
                return guest_unreadable(staging, reason, g, ret_error);
        }
        if (r < 0) {
                if (ret_error && err)
                        *ret_error = TAKE_PTR(err);
                return r;
        }
        g->summary.files = g->files->files;
        g->summary.symlinks = g->files->symlinks;
        g->summary.bytes = g->files->bytes;
        g->summary.truncated = g->files->truncated;
        g->summary.skipped = g->files->skipped;
        g->summary.complete = g->summary.truncated == 0 && g->summary.skipped == 0;
        log_seat_info(info->seat,
                      "%s: %" PRIu64 " file(s), %" PRIu64 " symlink(s), %" PRIu64 " bytes, %" PRIu64 " cut, %" PRIu64
                      " skipped, %" PRIu64 " listing(s) cut",
                      context, g->summary.files, g->summary.symlinks, g->summary.bytes, g->summary.truncated,
                      g->summary.skipped, g->files->listings_cut);
        return 0;
}

/* ---- sealing ---- */

typedef struct Inputs {
        ArchiveInput *v;
        size_t n;
        char **owned;             /* strings the inputs point to */
        size_t n_owned;
} Inputs;

static void inputs_done(Inputs *in) {
        for (size_t i = 0; i < in->n_owned; i++)
                free(in->owned[i]);
        free(in->owned);
        free(in->v);
}

static const char *own(Inputs *in, char *s) {
        if (s)
                in->owned[in->n_owned++] = s;
        return s;
}

typedef struct CaptureFile {
        unsigned number;
        char name[64];
} CaptureFile;

static int cmp_capture_file(const void *a, const void *b) {
        unsigned x = ((const CaptureFile *) a)->number, y = ((const CaptureFile *) b)->number;
        return x < y ? -1 : x > y;
}

/* capture-NNNN.pcapng */
static bool is_capture_file(const char *name) {
        return capture_ring_file_number(SEAL_CAPTURE_PREFIX, name) > 0;
}

/* The capture's counters (seat-capture.c wrote them; a session without capture has none).
 * Returns 1 when there are some, 0 when not. Damaged counters seal as an incomplete capture
 * with the reason, never as a failed seal: the packets are evidence all the same. */
static int read_capture_stats(const char *qdir, ArchiveCapture *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t len = 0;
        bool any = false, lost = false;
        if (asprintf(&path, "%s/" SEAL_CAPTURE_STATS, qdir) < 0)
                return -ENOMEM;
        DIR *d = opendir(qdir);
        struct dirent *de;
        while (d && !any && (de = readdir(d)))
                any = is_capture_file(de->d_name);
        if (d)
                closedir(d);
        int r = read_file_capped(path, 4096, &text, &len);
        if (r == -ENOENT && !any)
                return 0;
        *ret = (ArchiveCapture) {};
        bool ok = r >= 0 && json_frame_parse(text, len, 3, &o) >= 0 && !archive_capture_counts_parse(o, false, ret);
        if (!ok) {
                *ret = (ArchiveCapture) {};
                snprintf(ret->reason, sizeof(ret->reason), "the capture's counters are missing or damaged: what it lost is not known");
                return 1;
        }
        const char *werr = NULL;
        bool read_failed = false;
        (void) json_get_bool(o, "counts_lost", false, &lost);
        (void) json_get_bool(o, "read_failed", false, &read_failed);
        (void) json_get_string(o, "write_error", false, 200, &werr);
        /* Each cause, "; "-separated. */
        const char *why[3] = {
                read_failed ? "the capture stopped reading the seat's bridge before the session ended" : NULL,
                lost ? "seatd was killed during the session: its capture's counters before then are lost, and packets while it was down were not captured"
                     : ret->restarts ? "seatd restarted during the session: packets while it was down were not captured" : NULL,
                werr ? "writing the capture failed: " : NULL,
        };
        for (size_t i = 0; i < ELEMENTSOF(why); i++) {
                size_t used = strlen(ret->reason);
                if (why[i])
                        snprintf(ret->reason + used, sizeof(ret->reason) - used, "%s%s%s", used ? "; " : "", why[i],
                                 i == 2 ? werr : "");
        }
        for (char *p = ret->reason; *p; p++)
                if (*p < 0x20 || *p > 0x7e)
                        *p = '?';
        return 1;
}

static int host_inputs(Inputs *in, const char *qdir) {
        static const struct { const char *file, *role; } fixed[] = {
                { "audit.log", "audit" },
                { "console.log", "console" },
                { "capture.pcap", "capture" },
        };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
                char *p = NULL;
                if (asprintf(&p, "%s/%s", qdir, fixed[i].file) < 0)
                        return -ENOMEM;
                own(in, p);
                if (access(p, F_OK) == 0)
                        in->v[in->n++] = (ArchiveInput) { .name = fixed[i].file, .role = fixed[i].role, .path = p };
        }
        /* Segments from before a seatd restart: cut off where the old seatd died, their
         * first keys sealed beside them. The packet capture's files (seat-capture.c). */
        DIR *d = opendir(qdir);
        struct dirent *de;
        size_t n = 0, n_pcaps = 0;
        CaptureFile pcaps[SEAL_CAPTURE_FILES_MAX];
        while (d && (de = readdir(d))) {
                if (is_capture_file(de->d_name)) {
                        if (n_pcaps < SEAL_CAPTURE_FILES_MAX && strlen(de->d_name) < sizeof(pcaps[0].name)) {
                                pcaps[n_pcaps].number = capture_ring_file_number(SEAL_CAPTURE_PREFIX, de->d_name);
                                strcpy(pcaps[n_pcaps++].name, de->d_name);
                        }
                        continue;
                }
                if (n >= 2 * PRE_SEGMENTS_MAX)
                        continue;
                if (!strncmp(de->d_name, "audit-pre-", 10) || !strncmp(de->d_name, "console.log.", 12)) {
                        char *p = NULL, *name = strdup(de->d_name);
                        if (!name || asprintf(&p, "%s/%s", qdir, de->d_name) < 0) {
                                free(name);
                                closedir(d);
                                return -ENOMEM;
                        }
                        /* console.log.N: what virtlogd rotated out of the console log */
                        in->v[in->n++] = (ArchiveInput) { .name = own(in, name),
                                                          .role = name[0] == 'c' ? "console" : "file",
                                                          .path = own(in, p) };
                        n++;
                }
        }
        if (d)
                closedir(d);
        /* The capture's files in their order (the ring numbers them as it writes). */
        qsort(pcaps, n_pcaps, sizeof(CaptureFile), cmp_capture_file);
        for (size_t i = 0; i < n_pcaps; i++) {
                char *p = NULL, *name = strdup(pcaps[i].name);
                if (!name)
                        return -ENOMEM;
                if (asprintf(&p, "%s/%s", qdir, name) < 0) {
                        free(name);
                        return -ENOMEM;
                }
                in->v[in->n++] = (ArchiveInput) { .name = own(in, name), .role = "capture", .path = own(in, p) };
        }
        return 0;
}

/* "rec-K.cast": a terminal session's recording. Its ".dropped" count (bytes the cap left
 * out) makes the member's original_size, so the signed manifest marks it truncated. */
static bool is_recording(const char *name) {
        size_t n = strlen(name);
        return !strncmp(name, "rec-", 4) && n > 9 && !strcmp(name + n - 5, ".cast");
}

static int recording_inputs(Inputs *in, const char *qdir) {
        DIR *d = opendir(qdir);
        struct dirent *de;
        size_t n = 0;
        int r = 0;
        while (d && (de = readdir(d)) && n < RECORDINGS_MAX) {
                if (!is_recording(de->d_name))
                        continue;
                char *p = NULL, *name = strdup(de->d_name), *count = NULL;
                _cleanup_free_ char *side = NULL, *text = NULL;
                if (!own(in, name) || !own(in, asprintf(&p, "%s/%s", qdir, de->d_name) < 0 ? NULL : p) ||
                    asprintf(&side, "%s.dropped", p) < 0) {
                        r = -ENOMEM;
                        break;
                }
                uint64_t dropped = 0;
                if (read_file_capped(side, 32, &text, NULL) >= 0)
                        dropped = strtoull(text, &count, 10);
                struct stat st;
                uint64_t size = stat(p, &st) >= 0 ? (uint64_t) st.st_size : 0;
                in->v[in->n++] = (ArchiveInput) { .name = name, .role = "recording", .path = p,
                                                  .original_size = dropped ? size + dropped : 0 };
                n++;
        }
        if (d)
                closedir(d);
        return r;
}

static int guest_inputs(Inputs *in, const GuestPart *g) {
        for (size_t i = 0; g->files && i < g->files->n_entries; i++) {
                const GuestEntry *e = g->files->entries + i;
                char *name = NULL;
                if (asprintf(&name, "guest%s", e->guest_path) < 0)
                        return -ENOMEM;
                in->v[in->n++] = (ArchiveInput) { .name = own(in, name),
                                                  .role = e->kind == GUEST_ENTRY_SYMLINK ? "symlink" : "file",
                                                  .path = e->host_path, .original_size = e->original_size };
        }
        const char *index = g->files ? g->files->index_path : g->index_path;
        if (index)
                in->v[in->n++] = (ArchiveInput) { .name = "guest-index.txt", .role = "file", .path = index };
        return 0;
}

static uint64_t file_size(const char *path) {
        struct stat st;
        return stat(path, &st) >= 0 && S_ISREG(st.st_mode) ? (uint64_t) st.st_size : 0;
}

static bool same_filesystem(const char *a, const char *b) {
        struct stat sa, sb;
        return stat(a, &sa) >= 0 && stat(b, &sb) >= 0 && sa.st_dev == sb.st_dev;
}

/* The most a seal of qdir may write: the guest copies and their index beside the quarantine
 * (the caps, a block of slack per file), and the archive (host files + guest copies + its
 * manifest) when it goes to the same filesystem. The guest's listings never reach the disk
 * (images/guest-files.c reads them in memory). */
static uint64_t seal_disk_need(const SealContext *ctx, const char *qdir, bool guest) {
        const SeatConfig *c = ctx->config;
        uint64_t staging = guest ? c->evidence_max_bytes + GUEST_FILES_INDEX_MAX + ((uint64_t) c->evidence_max_files + 2) * 4096U : 0;
        if (!same_filesystem(qdir, ctx->archives_dir))
                return staging;
        uint64_t host = 0;
        static const char *const fixed[] = { "audit.log", "console.log", "capture.pcap" };
        for (size_t i = 0; i < ELEMENTSOF(fixed); i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", qdir, fixed[i]) >= 0)
                        host += file_size(p);
        }
        DIR *d = opendir(qdir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (!strncmp(de->d_name, "audit-pre-", 10) || !strncmp(de->d_name, "console.log.", 12) ||
                    is_capture_file(de->d_name) ||
                    is_recording(de->d_name)) {
                        _cleanup_free_ char *p = NULL;
                        if (asprintf(&p, "%s/%s", qdir, de->d_name) >= 0)
                                host += file_size(p);
                }
        if (d)
                closedir(d);
        return staging + staging + host + (1U << 20);
}

typedef struct SealAdmission {
        const SealContext *ctx;
        uint64_t need;
} SealAdmission;

static void seal_admission_done(SealAdmission *a) {
        if (a->need > 0 && a->ctx->settle)
                a->ctx->settle(a->ctx->userdata, a->need);
}

static int seal_locked(const SealContext *ctx, const char *qdir, char **ret_archive, SeatError **ret_error) {
        _cleanup_(session_info_done) SessionInfo info = {};
        _cleanup_(guest_part_done) GuestPart g = {};
        _cleanup_(inputs_done) Inputs in = {};
        _cleanup_free_ char *key_path = NULL, *sealed = NULL, *archive = NULL;
        size_t sealed_len = 0;

        int r = read_session_info(qdir, &info, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&key_path, "%s/audit.key", qdir) < 0)
                return -ENOMEM;
        r = read_file_capped(key_path, 4096, &sealed, &sealed_len);
        if (r < 0 || sealed_len != ARCHIVE_SEALED_AUDIT_KEY_BYTES)
                return seat_error_set(ret_error, r < 0 ? -r : EBADMSG,
                                      "the sealed audit key in '%s' is missing or damaged: seal this session by hand", qdir);
        /* What the seal writes is admitted like a seat's disk: it never takes the host's
         * reserve, nor what running seats were promised. */
        _cleanup_(seal_admission_done) SealAdmission adm = { .ctx = ctx };
        if (ctx->admit) {
                uint64_t need = seal_disk_need(ctx, qdir, info.paths[0] != NULL);
                r = ctx->admit(ctx->userdata, info.seat, need, ret_error);
                if (r < 0)
                        return r;
                adm.need = need;
        }
        if (info.paths[0]) {
                r = collect_guest(ctx, qdir, &info, &g, ret_error);
                if (r < 0)
                        return r;
        }

        size_t max = 3 + 2 * PRE_SEGMENTS_MAX + SEAL_CAPTURE_FILES_MAX + RECORDINGS_MAX + (g.files ? g.files->n_entries : 0) + 1;
        in.v = calloc(max, sizeof(ArchiveInput));
        in.owned = calloc(2 * max, sizeof(char *));
        if (!in.v || !in.owned)
                return -ENOMEM;
        r = host_inputs(&in, qdir);
        if (r >= 0)
                r = recording_inputs(&in, qdir);
        if (r >= 0)
                r = guest_inputs(&in, &g);
        if (r < 0)
                return r;

        if (mkdir(ctx->archives_dir, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "cannot create the archive directory '%s': %m", ctx->archives_dir);
        if (asprintf(&archive, "%s/%s-g%" PRId64 "-%lld.seatdev", ctx->archives_dir, info.seat, info.generation,
                     (long long) time(NULL)) < 0)
                return -ENOMEM;
        ArchiveCapture capture;
        r = read_capture_stats(qdir, &capture);
        if (r < 0)
                return r;
        ArchiveSealParams p = { .capture = r > 0 ? &capture : NULL, .seat_id = info.seat, .image_digest = info.image_digest, .inputs = in.v,
                                .n_inputs = in.n, .host_key = ctx->host_key, .facilitator = ctx->facilitator,
                                .audit_key_sealed = (const uint8_t *) sealed,
                                .collection = info.paths[0] ? &g.summary : NULL };
        r = archive_seal(archive, &p, ret_error);
        if (r < 0)
                return r;
        if (ret_archive)
                *ret_archive = TAKE_PTR(archive);
        return 0;
}

int seal_session_dir(const SealContext *ctx, const char *seat_id, const char *qdir, char **ret_archive,
                     SeatError **ret_error) {
        _cleanup_close_ int dfd = open(qdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *archive = NULL, *staging = NULL;
        if (dfd < 0)
                return seat_error_set(ret_error, errno, "cannot open the quarantine '%s': %m", qdir);
        if (flock(dfd, LOCK_EX | LOCK_NB) < 0)
                return seat_error_set(ret_error, errno == EWOULDBLOCK ? EBUSY : errno,
                                      "the session in '%s' is being sealed right now", qdir);
        if (!seal_dir_is_pending(qdir))
                return seat_error_set(ret_error, ENOENT, "'%s' holds no session to seal (sealed already?)", qdir);
        int r = seal_locked(ctx, qdir, &archive, ret_error);
        if (asprintf(&staging, "%s/" GUEST_STAGING, qdir) < 0)
                return -ENOMEM;
        if (r < 0) {
                /* The copies are made again on the next attempt: give their space back now. */
                (void) remove_dir(staging, 1);
                const char *why = ret_error && *ret_error ? (*ret_error)->message : strerror(-r);
                _cleanup_free_ char *note = NULL, *line = NULL;
                if (asprintf(&note, "%s/" SEAL_FAILED_NOTE, qdir) >= 0 && asprintf(&line, "%s\n", why) >= 0)
                        (void) write_file_atomic(note, line, strlen(line), 0600);
                return r;
        }
        /* Sealed and fsync'ed: the session's files go, the overlay with them. session.json
         * goes first: a crash in between leaves a directory that is not sealed again. */
        _cleanup_free_ char *info = NULL;
        if (asprintf(&info, "%s/" SEAL_SESSION_INFO, qdir) >= 0)
                (void) unlink(info);
        r = remove_dir(qdir, 1);
        if (r < 0)
                log_seat_warning(seat_id, "sealed into '%s', but cannot remove '%s': %s", archive, qdir, strerror(-r));
        if (ret_archive)
                *ret_archive = TAKE_PTR(archive);
        return 0;
}
