/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* evidence.* methods: list the archives and the sessions still to seal; retry sealing. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "evidence/archive.h"
#include "common/control-proto.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "methods.h"
#include "seal.h"
#include "seat.h"

#define LIST_MAX 10000
#define EVIDENCE_CHUNK_MAX (512u * 1024u)

static int filter_visible(const struct dirent *d) {
        return d->d_name[0] != '.';
}

static json_object *escaped_string(const char *s) {
        _cleanup_free_ char *e = log_escape(s, strlen(s), 1024);
        return json_object_new_string(e ? e : "?");
}

static json_object *archive_record(const char *dir, const char *name, const SeatPublicKey *host) {
        _cleanup_(archive_manifest_freep) ArchiveManifest *m = NULL;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *path = NULL;
        struct stat st;
        json_object *o = json_object_new_object();
        if (!o || asprintf(&path, "%s/%s", dir, name) < 0) {
                json_object_put(o);
                return NULL;
        }
        json_object_object_add(o, "name", escaped_string(name));
        json_object_object_add(o, "path", escaped_string(path));
        if (lstat(path, &st) == 0)
                json_object_object_add(o, "size", json_object_new_int64((int64_t) st.st_size));
        /* The manifest and its signature only: the payload's digest is 'seatctl evidence verify'. */
        if (archive_inspect(path, host, &m, &err) < 0) {
                json_object_object_add(o, "signature", json_object_new_string("bad"));
                json_object_object_add(o, "problem", escaped_string(err ? err->message : "?"));
                return o;
        }
        json_object_object_add(o, "signature", json_object_new_string("ok"));
        json_object_object_add(o, "seat", json_object_new_string(m->seat));
        json_object_object_add(o, "session", json_object_new_string(m->session));
        json_object_object_add(o, "image", json_object_new_string(m->image));
        json_object_object_add(o, "created_ms", json_object_new_int64(m->created_ms));
        json_object_object_add(o, "members", json_object_new_int64((int64_t) m->n_members));
        if (m->has_collection)
                json_object_object_add(o, "guest_complete", json_object_new_boolean(m->collection.complete));
        if (m->has_capture)
                json_object_object_add(o, "capture_complete", json_object_new_boolean(m->capture.complete));
        return o;
}

static json_object *pending_record(const char *qdir, const char *name) {
        _cleanup_free_ char *dir = NULL, *why = NULL;
        if (asprintf(&dir, "%s/%s", qdir, name) < 0)
                return NULL;
        if (!seal_dir_is_pending(dir))
                return NULL;
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "dir", escaped_string(dir));
        why = seal_dir_failure(dir);
        json_object_object_add(o, "state", json_object_new_string(why ? "failed" : "waiting"));
        if (why)
                json_object_object_add(o, "problem", escaped_string(why));
        return o;
}

static int list_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        int64_t limit = (int64_t) (intptr_t) data;
        SeatManager *seats = request_manager(req)->seats;
        const char *adir = seat_manager_archives_dir(seats), *qdir = seat_manager_quarantine_dir(seats);
        _cleanup_json_ json_object *res = json_object_new_object();
        json_object *archives = json_object_new_array(), *pending = json_object_new_array();
        _cleanup_free_ char *pub = NULL;
        SeatPublicKey pk;
        if (!res || !archives || !pending) {
                json_object_put(archives);
                json_object_put(pending);
                return -ENOMEM;
        }
        json_object_object_add(res, "archives", archives);
        json_object_object_add(res, "pending", pending);
        seat_manager_host_public_key(seats, &pk);
        if (seat_public_key_to_base64(&pk, &pub) < 0)
                return -ENOMEM;
        json_object_object_add(res, "host_key", json_object_new_string(pub));
        json_object_object_add(res, "archive_dir", json_object_new_string(adir));

        struct dirent **list = NULL;
        int n = scandir(adir, &list, filter_visible, alphasort);
        if (n < 0)
                return seat_error_set(ret_error, errno, "cannot list the archive directory '%s': %m", adir);
        for (int i = 0; i < n; i++) {
                if (i < limit && i < LIST_MAX) {
                        json_object *o = archive_record(adir, list[i]->d_name, &pk);
                        if (o)
                                json_object_array_add(archives, o);
                        job_progress(req, "read archive manifests", (uint64_t) i + 1, (uint64_t) n);
                }
                free(list[i]);
        }
        free(list);
        n = scandir(qdir, &list, filter_visible, alphasort);
        for (int i = 0; i < n; i++) {
                json_object *o = i < LIST_MAX ? pending_record(qdir, list[i]->d_name) : NULL;
                if (o)
                        json_object_array_add(pending, o);
                free(list[i]);
        }
        free(list);
        *ret_result = TAKE_PTR(res);
        return 0;
}

static int evidence_list_method(Request *req) {
        int64_t limit = LIST_MAX;
        if (json_get_int64(req->params, "limit", false, 0, LIST_MAX, &limit) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'limit' must be 0..%d", LIST_MAX);
        return request_start_job(req, list_job, (void *) (intptr_t) limit, NULL);
}

/* Sessions still to seal: the quarantine's pending directories, and how many failed. */
int evidence_seal_queue(SeatManager *seats, unsigned *ret_waiting, unsigned *ret_failed) {
        const char *qdir = seat_manager_quarantine_dir(seats);
        struct dirent **list = NULL;
        unsigned waiting = 0, failed = 0;
        int n = scandir(qdir, &list, filter_visible, alphasort);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *dir = NULL, *why = NULL;
                if (i < LIST_MAX && asprintf(&dir, "%s/%s", qdir, list[i]->d_name) >= 0 && seal_dir_is_pending(dir)) {
                        why = seal_dir_failure(dir);
                        if (why)
                                failed++;
                        else
                                waiting++;
                }
                free(list[i]);
        }
        free(list);
        *ret_waiting = waiting;
        *ret_failed = failed;
        return n < 0 && errno != ENOENT ? -errno : 0;
}

/* A sealed archive, a piece at a time: the dashboard's download. Only a plain name from
 * the archive directory (what evidence.list shows), never a path. */
static int evidence_read_method(Request *req) {
        const char *name = NULL;
        int64_t offset = 0, max = EVIDENCE_CHUNK_MAX;
        if (json_get_string(req->params, "archive", true, 255, &name) < 0 ||
            json_get_int64(req->params, "offset", false, 0, INT64_MAX - 1, &offset) < 0 ||
            json_get_int64(req->params, "max_bytes", false, 1, EVIDENCE_CHUNK_MAX, &max) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "evidence.read takes 'archive' (a name from evidence.list), 'offset' and 'max_bytes' (1..%u)",
                                           EVIDENCE_CHUNK_MAX);
        if (!*name || name[0] == '.' || strchr(name, '/'))
                return request_reply_error(req, CONTROL_ERR_INVALID, "'archive' is a name from evidence.list, not a path");
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", seat_manager_archives_dir(request_manager(req)->seats), name) < 0)
                return -ENOMEM;
        struct stat st;
        if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
                _cleanup_free_ char *e = log_escape(name, strlen(name), 64);
                return request_reply_error(req, CONTROL_ERR_NOT_FOUND, "no archive '%s' (see evidence.list)", e ? e : "?");
        }
        return request_reply_file_chunk(req, path, offset, (size_t) max);
}

static void retry_args_free(void *p) {
        free(p);
}

static int retry_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        const char *seat = data;
        job_progress(req, "seal", 0, 1);
        return seat_evidence_retry(request_manager(req)->seats, seat && *seat ? seat : NULL, ret_result, ret_error);
}

static int evidence_retry_method(Request *req) {
        const char *seat = NULL;
        if (json_get_string(req->params, "seat", false, 64, &seat) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "'seat' must be a seat id");
        char *copy = strdup(seat ? seat : "");
        if (!copy)
                return -ENOMEM;
        return request_start_job(req, retry_job, copy, retry_args_free);
}

static const Method evidence_methods[] = {
        { "evidence.list", evidence_list_method, true, true },
        { "evidence.read", evidence_read_method, true, true },
        { "evidence.retry", evidence_retry_method, true, false },
};

int evidence_methods_init(Manager *m, SeatError **ret_error) {
        if (!m->seats)
                return seat_error_set(ret_error, EINVAL, "evidence methods need the seat manager");
        return server_add_methods(m->server, evidence_methods, ELEMENTSOF(evidence_methods));
}
