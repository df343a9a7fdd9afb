/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* pool.* methods: size the pools of ready seats and show them (docs/pools.md). */
#include <string.h>

#include "common/control-proto.h"
#include "common/jsonframe.h"
#include "methods.h"
#include "pool-state.h"
#include "pool.h"

static int pool_set_method(Request *req) {
        _cleanup_error_ SeatError *err = NULL;
        const char *image = NULL, *egress = NULL;
        int64_t ready = -1;
        json_object *o = NULL;
        if (json_get_string(req->params, "image", true, IMAGE_NAME_MAX, &image) < 0 ||
            json_get_int64(req->params, "ready", true, 0, POOL_READY_MAX, &ready) < 0 ||
            json_get_string(req->params, "egress", false, 32, &egress) < 0)
                return request_reply_error(req, CONTROL_ERR_INVALID,
                                           "pool.set needs 'image' and 'ready' (0..%d; 0 removes the pool), and takes 'egress' (a profile name)",
                                           POOL_READY_MAX);
        /* Quick: the pools' worker boots the seats. */
        if (pool_manager_set(request_manager(req)->pools, image, egress, ready, &o, &err) < 0)
                return err ? request_reply_seat_error(req, err) : request_reply_error(req, CONTROL_ERR_IO, "out of memory");
        return request_reply_result(req, o);
}

static int pool_status_method(Request *req) {
        json_object *o = NULL;
        int r = pool_manager_status(request_manager(req)->pools, &o);
        if (r < 0)
                return r;
        return request_reply_result(req, o);
}

static const Method pool_methods[] = {
        { "pool.set", pool_set_method, true, false },
        { "pool.status", pool_status_method, true, true },
};

int pool_methods_init(Manager *m, SeatError **ret_error) {
        int r = pool_manager_new(m->config, m->seats, m->store, &m->pools, ret_error);
        if (r < 0)
                return r;
        return server_add_methods(m->server, pool_methods, ELEMENTSOF(pool_methods));
}

void pool_methods_done(Manager *m) {
        m->pools = pool_manager_free(m->pools);
}
