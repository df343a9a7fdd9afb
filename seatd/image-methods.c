/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image.* methods of the control protocol: the verified image store, behind seatctl image. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/control-proto.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "methods.h"
#include "images/pull.h"
#include "seat.h"
#include "images/store.h"

static ImageStore *store_of(Request *req) {
        return request_manager(req)->store;
}

static void job_progress_cb(void *userdata, const char *what, uint64_t done, uint64_t total) {
        job_progress(userdata, what, done, total);
}

static bool job_cancelled_cb(void *userdata) {
        return job_cancelled(userdata);
}

static int image_record(const ImageManifest *m, json_object **ret) {
        int r = image_manifest_to_json(m, ret);
        if (r < 0)
                return r;
        return 0;
}

/* The import and verify jobs take one string (the manifest's path, the image's name): their
 * data is that string, freed with free(). */
static int import_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        const char *manifest = data;
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        StoreCallbacks cb = { .progress = job_progress_cb, .cancelled = job_cancelled_cb, .userdata = req };

        int r = image_store_import(store_of(req), manifest, &cb, &m, ret_error);
        if (r < 0) {
                log_warning("image import of '%s' refused: %s", manifest, *ret_error ? (*ret_error)->message : strerror(-r));
                return r;
        }
        log_notice("imported image '%s' version %lld from '%s'", m->name, (long long) m->version, manifest);
        return image_record(m, ret_result);
}

static int image_import_method(Request *req) {
        const char *path = NULL;
        if (json_get_string(req->params, "manifest", true, 4096, &path) < 0 || path[0] != '/')
                return request_reply_error(req, CONTROL_ERR_INVALID, "image.import needs 'manifest', an absolute path");
        char *manifest = strdup(path);
        if (!manifest)
                return -ENOMEM;
        return request_start_job(req, import_job, manifest, free);
}

typedef struct PullArgs {
        char *url;
        char *display; /* the URL without credentials or query, for the log */
} PullArgs;

static void pull_args_free(void *p) {
        PullArgs *a = p;
        if (!a)
                return;
        FREE_MANY(a->url, a->display, a);
}

static char *staging_dir(const SeatConfig *c) {
        char *p = NULL;
        return asprintf(&p, "%s/images/staging", c->state_dir) < 0 ? NULL : p;
}

static int pull_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        PullArgs *a = data;
        const SeatConfig *c = server_config(req->server);
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        _cleanup_free_ char *staging = staging_dir(c);
        StoreCallbacks cb = { .progress = job_progress_cb, .cancelled = job_cancelled_cb, .userdata = req };

        if (!staging)
                return -ENOMEM;
        PullOptions opts = {
                .allow_plain_http = c->allow_plain_http,
                .ca_file = c->ca_file,
                .staging_dir = staging,
                .max_file_bytes = c->max_image_bytes,
                .low_speed_limit = c->pull_low_speed_limit,
                .low_speed_time = c->pull_low_speed_time,
                .connect_timeout = c->pull_connect_timeout,
        };
        int r = image_pull(store_of(req), a->url, &opts, &cb, &m, ret_error);
        if (r < 0) {
                log_warning("image pull from '%s' failed: %s", a->display, *ret_error ? (*ret_error)->message : strerror(-r));
                return r;
        }
        log_notice("pulled image '%s' version %lld from '%s'", m->name, (long long) m->version, a->display);
        return image_record(m, ret_result);
}

static int image_pull_method(Request *req) {
        const SeatConfig *c = server_config(req->server);
        _cleanup_error_ SeatError *err = NULL;
        const char *url = NULL;

        if (json_get_string(req->params, "url", true, PULL_URL_MAX, &url) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID, "image.pull needs 'url', the https:// URL of a manifest");
        PullArgs *a = calloc(1, sizeof(*a));
        if (!a || !(a->url = strdup(url))) {
                pull_args_free(a);
                return -ENOMEM;
        }
        /* Refused at once when the URL itself is wrong: no worker for that. */
        int r = image_pull_check_url(url, c->allow_plain_http, &a->display, &err);
        if (r < 0) {
                pull_args_free(a);
                if (r == -ENOMEM)
                        return r;
                log_warning("image pull refused: %s", err ? err->message : strerror(-r));
                return request_reply_seat_error(req, err);
        }
        return request_start_job(req, pull_job, a, pull_args_free);
}

static int image_list_method(Request *req) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_json_ json_object *arr = json_object_new_array(), *res = json_object_new_object();

        if (!arr || !res)
                return -ENOMEM;
        if (image_store_list(store_of(req), &names, &err) < 0)
                return request_reply_seat_error(req, err);
        for (char **n = names; *n; n++) {
                _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
                json_object *rec = NULL;
                _cleanup_error_ SeatError *e = NULL;
                if (image_store_get(store_of(req), *n, &m, &e) < 0) {
                        /* A stored image that no longer verifies is listed as such. */
                        rec = json_object_new_object();
                        json_object_object_add(rec, "name", json_object_new_string(*n));
                        json_object_object_add(rec, "problem", json_object_new_string(e ? e->message : "unreadable"));
                } else if (image_record(m, &rec) < 0)
                        return -ENOMEM;
                json_object_array_add(arr, rec);
        }
        json_object_object_add(res, "images", TAKE_PTR(arr));
        return request_reply_result(req, TAKE_PTR(res));
}

static int verify_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        const char *name = data;
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        _cleanup_error_ SeatError *problem = NULL;
        StoreCallbacks cb = { .progress = job_progress_cb, .cancelled = job_cancelled_cb, .userdata = req };

        int r = image_store_verify(store_of(req), name, &cb, &m, &problem);
        if (!m) {
                /* Not even the manifest: no such image, or its signature fails. */
                *ret_error = TAKE_PTR(problem);
                return r < 0 ? r : -EIO;
        }
        json_object *rec = NULL;
        if (image_record(m, &rec) < 0)
                return -ENOMEM;
        json_object_object_add(rec, "verified", json_object_new_boolean(r >= 0));
        if (r < 0) {
                json_object_object_add(rec, "problem", json_object_new_string(problem ? problem->message : strerror(-r)));
                log_warning("image '%s' failed verification: %s", name, problem ? problem->message : strerror(-r));
        }
        *ret_result = rec;
        return 0;
}

static int name_param(Request *req, const char *method, char **ret) {
        const char *name = NULL;
        if (json_get_string(req->params, "name", true, 64, &name) < 0 || !image_name_valid(name)) {
                (void) request_reply_error(req, CONTROL_ERR_INVALID, "%s needs 'name', an image name", method);
                return -EINVAL;
        }
        *ret = strdup(name);
        return *ret ? 0 : -ENOMEM;
}

static int image_verify_method(Request *req) {
        char *name = NULL;
        int r = name_param(req, "image.verify", &name);
        if (r < 0)
                return r == -EINVAL ? 0 : r;
        return request_start_job(req, verify_job, name, free);
}

static int image_remove_method(Request *req) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *name = NULL;
        int r = name_param(req, "image.remove", &name);
        if (r < 0)
                return r == -EINVAL ? 0 : r;
        SeatManager *seats = request_manager(req)->seats;
        if (seats && seat_image_in_use(seats, name))
                return request_reply_error(req, CONTROL_ERR_STATE,
                                           "image '%s' is in use by seats: release them first (seatctl list)", name);
        if (image_store_remove(store_of(req), name, &err) < 0)
                return request_reply_seat_error(req, err);
        log_notice("removed image '%s'", name);
        return request_reply_result(req, json_object_new_object());
}

static const Method image_methods[] = {
        { "image.import", image_import_method, true, false },
        { "image.pull", image_pull_method, true, false },
        { "image.list", image_list_method, true, false },
        { "image.verify", image_verify_method, true, false },
        { "image.remove", image_remove_method, true, false },
};

int image_methods_init(Manager *m, SeatError **ret_error) {
        const SeatConfig *c = m->config;
        _cleanup_free_ char *images = NULL, *trust = NULL;
        if (asprintf(&images, "%s/images", c->state_dir) < 0 || asprintf(&trust, "%s/trust", c->state_dir) < 0)
                return -ENOMEM;
        int r = image_store_open(images, trust, c->trusted_keys_dir, c->max_image_bytes, &m->store, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *guestfs_cache = NULL;
        if (asprintf(&guestfs_cache, "%s/guestfs-cache", c->state_dir) < 0)
                return -ENOMEM;
        r = image_store_set_inspect(m->store, c->inspect_images, guestfs_cache, c->accel == SEAT_ACCEL_TCG);
        if (r < 0)
                return seat_error_set(ret_error, -r, "create the inspection cache '%s': %s", guestfs_cache, strerror(-r));
        /* No pull runs yet: what an interrupted one left besides its .part files goes. */
        _cleanup_free_ char *staging = staging_dir(c);
        if (!staging)
                return -ENOMEM;
        r = image_pull_clean_staging(staging);
        if (r < 0)
                log_warning("clean the staging directory '%s': %s", staging, strerror(-r));
        return server_add_methods(m->server, image_methods, ELEMENTSOF(image_methods));
}

void image_methods_done(Manager *m) {
        m->store = image_store_free(m->store);
}
