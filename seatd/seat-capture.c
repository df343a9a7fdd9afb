/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-capture.c: a seat's packet capture (profile "capture on"), one per session: started
 * before its machine joins the bridge, stopped after the machine left it, its files set
 * aside with the session for sealing. */
#include "seat-internal.h"

#define CAPTURE_STATS_MAX 4096

/* The counters, as saved beside the files ("capture-gN.json", then "capture.json" in the
 * quarantine) and read back by a restarted seatd and by the seal. */
static const ArchiveCount stat_keys[] = {
        { "packets", offsetof(CaptureStats, packets) },
        { "bytes_on_wire", offsetof(CaptureStats, bytes_on_wire) },
        { "packets_cut", offsetof(CaptureStats, packets_cut) },
        { "bytes_cut", offsetof(CaptureStats, bytes_cut) },
        { "files", offsetof(CaptureStats, files) },
        { "bytes", offsetof(CaptureStats, bytes) },
        { "files_rotated", offsetof(CaptureStats, files_rotated) },
        { "packets_rotated", offsetof(CaptureStats, packets_rotated) },
        { "bytes_rotated", offsetof(CaptureStats, bytes_rotated) },
        { "packets_unwritten", offsetof(CaptureStats, packets_unwritten) },
        { "kernel_drops", offsetof(CaptureStats, kernel_drops) },
};

static uint64_t *stat_field(CaptureStats *st, size_t i) {
        return (uint64_t *) ((char *) st + stat_keys[i].offset);
}

static json_object *stats_to_json(const CaptureStats *st) {
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o || archive_counts_to_json(o, stat_keys, ELEMENTSOF(stat_keys), st) < 0)
                return NULL;
        return TAKE_PTR(o);
}

static int stats_from_json(json_object *o, CaptureStats *ret) {
        return archive_counts_parse(o, stat_keys, ELEMENTSOF(stat_keys), NULL, ret) ? -EBADMSG : 0;
}

/* The earlier runs of this session's capture, then this one: files and bytes are what is
 * on disk now (the ring counted the earlier files when it started). */
static CaptureStats stats_merge(const CaptureStats *prev, const CaptureStats *cur) {
        CaptureStats t = *cur;
        CaptureStats p = *prev;
        for (size_t i = 0; i < ELEMENTSOF(stat_keys); i++)
                if (stat_keys[i].offset != offsetof(CaptureStats, files) && stat_keys[i].offset != offsetof(CaptureStats, bytes))
                        *stat_field(&t, i) += *stat_field(&p, i);
        if (!t.write_error)
                t.write_error = p.write_error;
        t.read_failed = t.read_failed || p.read_failed;
        return t;
}

static int paths(const Seat *s, int64_t generation, char **ret_prefix, char **ret_stats) {
        if (asprintf(ret_prefix, "capture-g%" PRId64 "-", generation) < 0)
                return -ENOMEM;
        if (asprintf(ret_stats, "%s/capture-g%" PRId64 ".json", s->dir, generation) < 0) {
                free(*ret_prefix);
                return -ENOMEM;
        }
        return 0;
}

/* The saved counters of an earlier run of this session (a seatd restart). ret_lost: there
 * were files but no counters (seatd was killed). */
static void load_earlier(const Seat *s, const char *stats_path, SeatCapture *sc) {
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t len = 0;
        int64_t v = 0;
        if (read_file_capped(stats_path, CAPTURE_STATS_MAX, &text, &len) < 0 || json_frame_parse(text, len, 3, &o) < 0 ||
            stats_from_json(o, &sc->prev) < 0) {
                sc->prev = (CaptureStats) {};
                return;
        }
        if (json_get_int64(o, "restarts", false, 0, INT32_MAX, &v) >= 0)
                sc->restarts = (uint64_t) v;
        bool lost = false;
        if (json_get_bool(o, "counts_lost", false, &lost) >= 0)
                sc->counts_lost = lost;
}

static bool earlier_files(const Seat *s, const char *prefix) {
        DIR *d = opendir(s->dir);
        struct dirent *de;
        bool found = false;
        while (d && !found && (de = readdir(d)))
                found = capture_ring_file_number(prefix, de->d_name) > 0;
        if (d)
                closedir(d);
        return found;
}

int seat_capture_start(SeatManager *m, Seat *s, SeatError **ret_error) {
        _cleanup_free_ char *prefix = NULL, *stats_path = NULL;
        unsigned snaplen, max_mib;
        Capture *c = NULL;
        if (!s->net || !seatnet_capture(s->net, &snaplen, &max_mib))
                return 0;
        int r = paths(s, s->rec.generation, &prefix, &stats_path);
        if (r < 0)
                return r;
        SeatCapture sc = { .generation = s->rec.generation, .snaplen = snaplen, .max_bytes = (uint64_t) max_mib << 20 };
        if (access(stats_path, F_OK) == 0) {
                load_earlier(s, stats_path, &sc);
                sc.restarts++;
        } else if (earlier_files(s, prefix)) {
                sc.restarts++;
                sc.counts_lost = true;
        }
        CaptureParams p = { .ifname = seatnet_bridge(s->net), .dir = s->dir, .prefix = prefix, .snaplen = snaplen,
                            .max_bytes = sc.max_bytes };
        r = capture_start(&p, &c, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s' (its egress profile says 'capture on')", s->rec.id);
        (void) unlink(stats_path); /* written again, whole, when it stops */
        sc.c = c;
        pthread_mutex_lock(&m->lock);
        s->capture = sc;
        pthread_mutex_unlock(&m->lock);
        log_seat_info(s->rec.id, "seat '%s': capturing its bridge '%s' (snaplen %u, at most %u MiB)%s", s->rec.id,
                      p.ifname, snaplen, max_mib, sc.restarts ? ", continued after a seatd restart" : "");
        return 0;
}

/* Stop it (its machine is off the bridge by now) and save its counters beside its files. */
void seat_capture_stop(SeatManager *m, Seat *s) {
        _cleanup_free_ char *prefix = NULL, *stats_path = NULL, *text = NULL;
        CaptureStats cur = {};
        size_t len = 0;
        pthread_mutex_lock(&m->lock);
        SeatCapture sc = s->capture;
        s->capture.c = NULL;
        pthread_mutex_unlock(&m->lock);
        if (!sc.c)
                return;
        capture_stop(sc.c, &cur);
        CaptureStats t = stats_merge(&sc.prev, &cur);
        _cleanup_json_ json_object *o = stats_to_json(&t);
        if (!o || paths(s, sc.generation, &prefix, &stats_path) < 0)
                return;
        json_object_object_add(o, "snaplen", json_object_new_int64(sc.snaplen));
        json_object_object_add(o, "max_bytes", json_object_new_int64((int64_t) sc.max_bytes));
        json_object_object_add(o, "restarts", json_object_new_int64((int64_t) sc.restarts));
        json_object_object_add(o, "counts_lost", json_object_new_boolean(sc.counts_lost));
        if (t.write_error)
                json_object_object_add(o, "write_error", json_object_new_string(strerror(t.write_error)));
        if (t.read_failed)
                json_object_object_add(o, "read_failed", json_object_new_boolean(true));
        int r = json_frame_format(o, CAPTURE_STATS_MAX, &text, &len);
        if (r >= 0)
                r = write_file_atomic(stats_path, text, len, 0600);
        if (r < 0)
                log_seat_warning(s->rec.id, "seat '%s': cannot save the capture's counters to '%s': %s", s->rec.id,
                                 stats_path, strerror(-r));
        log_seat_info(s->rec.id,
                      "seat '%s': capture of generation %" PRId64 " stopped: %" PRIu64 " packets, %" PRIu64 " file(s) of %" PRIu64
                      " bytes, %" PRIu64 " rotated away, %" PRIu64 " cut at snaplen, %" PRIu64 " dropped by the kernel",
                      s->rec.id, sc.generation, t.packets, t.files, t.bytes, t.files_rotated, t.packets_cut, t.kernel_drops);
}

/* This generation's files into the quarantine q: capture-NNNN.pcapng and capture.json. */
int seat_capture_quarantine(Seat *s, const char *q, SeatError **ret_error) {
        _cleanup_free_ char *prefix = NULL, *stats_path = NULL, *to = NULL;
        int r = paths(s, s->rec.generation, &prefix, &stats_path);
        if (r < 0)
                return r;
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && r >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *from = NULL, *dest = NULL;
                unsigned n = capture_ring_file_number(prefix, de->d_name);
                if (n == 0)
                        continue;
                if (asprintf(&from, "%s/%s", s->dir, de->d_name) < 0 || asprintf(&dest, "%s/capture-%04u.pcapng", q, n) < 0)
                        r = -ENOMEM;
                else if (rename(from, dest) < 0)
                        r = seat_error_set(ret_error, errno, "set aside the capture '%s' of seat '%s': %m", from, s->rec.id);
        }
        if (d)
                closedir(d);
        if (r >= 0 && asprintf(&to, "%s/" SEAL_CAPTURE_STATS, q) < 0)
                r = -ENOMEM;
        if (r >= 0 && rename(stats_path, to) < 0 && errno != ENOENT)
                r = seat_error_set(ret_error, errno, "set aside the capture counters of seat '%s': %m", s->rec.id);
        return r;
}

/* A provision that failed: its files are nobody's session. */
void seat_capture_remove(SeatManager *m, Seat *s) {
        _cleanup_free_ char *prefix = NULL, *stats_path = NULL;
        seat_capture_stop(m, s);
        if (!s->dir || paths(s, s->rec.generation, &prefix, &stats_path) < 0)
                return;
        (void) unlink(stats_path);
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (capture_ring_file_number(prefix, de->d_name) > 0)
                        (void) unlinkat(dirfd(d), de->d_name, 0);
        if (d)
                closedir(d);
}

/* Under the manager's lock: {on, snaplen, max_bytes, packets, bytes, files, drops, …}. */
json_object *seat_capture_to_json_locked(Seat *s) {
        unsigned snaplen, max_mib;
        if (!s->net || !seatnet_capture(s->net, &snaplen, &max_mib))
                return NULL;
        CaptureStats cur = {}, t;
        if (s->capture.c)
                capture_stats(s->capture.c, &cur);
        t = stats_merge(&s->capture.prev, &cur);
        json_object *o = stats_to_json(&t);
        if (!o)
                return NULL;
        json_object_object_add(o, "on", json_object_new_boolean(s->capture.c != NULL && !t.read_failed));
        if (t.read_failed)
                json_object_object_add(o, "error", json_object_new_string("it stopped reading the seat's bridge"));
        json_object_object_add(o, "snaplen", json_object_new_int64(snaplen));
        json_object_object_add(o, "max_bytes", json_object_new_int64((int64_t) max_mib << 20));
        /* every way it holds less than all the traffic, in one number */
        json_object_object_add(o, "drops", json_object_new_int64((int64_t) (t.kernel_drops + t.packets_rotated + t.packets_unwritten)));
        json_object_object_add(o, "restarts", json_object_new_int64((int64_t) s->capture.restarts));
        return o;
}
