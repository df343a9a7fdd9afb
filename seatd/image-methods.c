/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* image.* methods of the control protocol: the verified image store, behind seatctl image. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "control-proto.h"
#include "jsonframe.h"
#include "log.h"
#include "methods.h"
#include "store.h"

static ImageStore *store_of(Request *req) {
        return server_get_userdata(req->server, "image-store");
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

typedef struct ImportArgs {
        char *manifest;
} ImportArgs;

static void import_args_free(void *p) {
        ImportArgs *a = p;
        if (!a)
                return;
        free(a->manifest);
        free(a);
}

static int import_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        ImportArgs *a = data;
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        StoreCallbacks cb = { .progress = job_progress_cb, .cancelled = job_cancelled_cb, .userdata = req };

        int r = image_store_import(store_of(req), a->manifest, &cb, &m, ret_error);
        if (r < 0) {
                log_warning("image import of '%s' refused: %s", a->manifest, *ret_error ? (*ret_error)->message : strerror(-r));
                return r;
        }
        log_notice("imported image '%s' version %lld from '%s'", m->name, (long long) m->version, a->manifest);
        return image_record(m, ret_result);
}

static int image_import_method(Request *req) {
        const char *path = NULL;
        if (json_get_string(req->params, "manifest", true, 4096, &path) < 0 || path[0] != '/')
                return request_reply_error(req, CONTROL_ERR_INVALID, "image.import needs 'manifest', an absolute path");
        ImportArgs *a = calloc(1, sizeof(*a));
        if (!a || !(a->manifest = strdup(path))) {
                import_args_free(a);
                return -ENOMEM;
        }
        return request_start_job(req, import_job, a, import_args_free);
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

typedef struct NameArgs {
        char *name;
} NameArgs;

static void name_args_free(void *p) {
        NameArgs *a = p;
        if (!a)
                return;
        free(a->name);
        free(a);
}

static int verify_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        NameArgs *a = data;
        _cleanup_(image_manifest_freep) ImageManifest *m = NULL;
        _cleanup_error_ SeatError *problem = NULL;
        StoreCallbacks cb = { .progress = job_progress_cb, .cancelled = job_cancelled_cb, .userdata = req };

        int r = image_store_verify(store_of(req), a->name, &cb, &m, &problem);
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
                log_warning("image '%s' failed verification: %s", a->name, problem ? problem->message : strerror(-r));
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
        NameArgs *a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        int r = name_param(req, "image.verify", &a->name);
        if (r < 0) {
                name_args_free(a);
                return r == -EINVAL ? 0 : r;
        }
        return request_start_job(req, verify_job, a, name_args_free);
}

static int image_remove_method(Request *req) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *name = NULL;
        int r = name_param(req, "image.remove", &name);
        if (r < 0)
                return r == -EINVAL ? 0 : r;
        if (image_store_remove(store_of(req), name, &err) < 0)
                return request_reply_seat_error(req, err);
        log_notice("removed image '%s'", name);
        return request_reply_result(req, json_object_new_object());
}

static const Method image_methods[] = {
        { "image.import", image_import_method, true },
        { "image.list", image_list_method, true },
        { "image.verify", image_verify_method, true },
        { "image.remove", image_remove_method, true },
};

static ImageStore *the_store;

int image_methods_init(Server *s, SeatError **ret_error) {
        const SeatConfig *c = server_config(s);
        _cleanup_free_ char *images = NULL, *trust = NULL;
        if (asprintf(&images, "%s/images", c->state_dir) < 0 || asprintf(&trust, "%s/trust", c->state_dir) < 0)
                return -ENOMEM;
        int r = image_store_open(images, trust, c->trusted_keys_dir, c->max_image_bytes, &the_store, ret_error);
        if (r < 0)
                return r;
        server_set_userdata(s, "image-store", the_store);
        return server_add_methods(s, image_methods, ELEMENTSOF(image_methods));
}

void image_methods_done(void) {
        the_store = image_store_free(the_store);
}
