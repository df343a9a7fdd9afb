/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the facilitator's dashboard (seat-web) shows, on the operator and facilitator
 * sockets: events.subscribe, a live stream of snapshots of the room, and metrics, the
 * numbers behind /metrics.
 *
 * A snapshot is the whole room (every seat as seat.list shows it, the pools, the seal
 * queue, the host's memory and disk), sent at once, again as soon as something changed
 * (seatd/changes.h), at most every SNAPSHOT_MIN_GAP_MS, and every SNAPSHOT_HEARTBEAT_MS in
 * any case. Whole snapshots rather than deltas: a subscriber that reads slowly loses only
 * states that were already replaced, never one it would need to make sense of the next,
 * and it needs no state of its own to resynchronise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "changes.h"
#include "common/control-proto.h"
#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "images/manifest.h"
#include "methods.h"
#include "metrics.h"
#include "seat.h"

#define SNAPSHOT_MIN_GAP_MS 250
#define SNAPSHOT_POLL_MS 2000       /* counters (denied packets, disk use) move without a bump */
#define SNAPSHOT_HEARTBEAT_MS 15000 /* even unchanged: the subscriber knows seatd is there */
#define SUBSCRIBERS_MAX 8           /* each holds a worker thread */

/* MemTotal and MemAvailable from /proc/meminfo, in bytes (0 when unreadable). */
static void host_memory(uint64_t *ret_total, uint64_t *ret_available) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        *ret_total = *ret_available = 0;
        if (read_file_capped("/proc/meminfo", 64 * 1024, &text, &len) < 0)
                return;
        for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                unsigned long long kib;
                if (sscanf(line, "MemTotal: %llu kB", &kib) == 1)
                        *ret_total = (uint64_t) kib * 1024;
                else if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
                        *ret_available = (uint64_t) kib * 1024;
        }
}

static json_object *host_json(const SeatConfig *c) {
        json_object *o = json_object_new_object();
        uint64_t total, avail;
        struct statvfs vfs;
        if (!o)
                return NULL;
        host_memory(&total, &avail);
        json_object_object_add(o, "mem_total_bytes", json_object_new_int64((int64_t) total));
        json_object_object_add(o, "mem_available_bytes", json_object_new_int64((int64_t) avail));
        /* The disk seats, warm states and evidence fill: state_dir's. */
        if (statvfs(c->state_dir, &vfs) == 0) {
                json_object_object_add(o, "disk_total_bytes", json_object_new_int64((int64_t) (vfs.f_blocks * vfs.f_frsize)));
                json_object_object_add(o, "disk_free_bytes", json_object_new_int64((int64_t) (vfs.f_bavail * vfs.f_frsize)));
        }
        return o;
}

static json_object *seal_json(Manager *m) {
        unsigned waiting = 0, failed = 0;
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        (void) evidence_seal_queue(m->seats, &waiting, &failed);
        json_object_object_add(o, "queue", json_object_new_int64(waiting));
        json_object_object_add(o, "failed", json_object_new_int64(failed));
        json_object_object_add(o, "failures", json_object_new_int64(
                (int64_t) atomic_load(&seat_manager_metrics(m->seats)->seal_failures)));
        return o;
}

/* The room, without the time (so two snapshots compare equal when nothing changed). */
static int snapshot(Manager *m, json_object **ret) {
        json_object *o = json_object_new_object(), *pools = NULL;
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "seats", seat_manager_list_json(m->seats));
        if (pool_manager_status(m->pools, &pools) >= 0)
                json_object_object_add(o, "pools", pools);
        json_object_object_add(o, "seal", seal_json(m));
        json_object_object_add(o, "host", host_json(m->config));
        *ret = o;
        return 0;
}

static int subscribe_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        Manager *m = request_manager(req);
        Changes *changes = seat_manager_changes(m->seats);
        _cleanup_free_ char *last = NULL;
        int64_t built = 0, sent = 0;
        uint64_t seq = changes_wait(changes, UINT64_MAX, 0), seen = seq - 1; /* build at once */
        int r = 0;

        while (!job_cancelled(req)) {
                int64_t now = now_monotonic_ms();
                if (seq != seen || now - built >= SNAPSHOT_POLL_MS || now - sent >= SNAPSHOT_HEARTBEAT_MS) {
                        _cleanup_json_ json_object *o = NULL;
                        seen = seq;
                        built = now;
                        if ((r = snapshot(m, &o)) < 0)
                                break;
                        const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
                        if (!last || strcmp(last, text) || now - sent >= SNAPSHOT_HEARTBEAT_MS) {
                                char when[32];
                                free(last);
                                if (!(last = strdup(text))) {
                                        r = -ENOMEM;
                                        break;
                                }
                                if (rfc3339_format((int64_t) time(NULL), when, sizeof(when)) >= 0)
                                        json_object_object_add(o, "time", json_object_new_string(when));
                                /* Droppable: a subscriber that does not read pins at most
                                 * OUT_SOFT_CAP here; when it reads again, the next
                                 * snapshot is whole. */
                                job_event_droppable(req, "snapshot", o);
                                sent = now_monotonic_ms();
                                /* Changes closer than this go out together, in the next one. */
                                for (int64_t gap = SNAPSHOT_MIN_GAP_MS; gap > 0 && !job_cancelled(req); gap -= 50)
                                        usleep(50 * 1000);
                        }
                }
                /* At most a second between looks at job_cancelled(): a gone dashboard (or a
                 * stopping seatd) frees its thread soon. */
                seq = changes_wait(changes, seen, 1000);
        }
        if (r < 0)
                return r;
        return seat_error_set(ret_error, ECANCELED, "the subscription ended: its client went away or seatd is stopping");
}

static void subscriber_done(void *data) {
        Manager *m = data;
        atomic_fetch_sub(&m->subscribers, 1);
}

static int events_subscribe_method(Request *req) {
        Manager *m = request_manager(req);
        if (atomic_fetch_add(&m->subscribers, 1) >= SUBSCRIBERS_MAX) {
                atomic_fetch_sub(&m->subscribers, 1);
                return request_reply_error(req, CONTROL_ERR_STATE,
                                           "%d event subscriptions are open already: close one (seat-web needs one for all its dashboards)",
                                           SUBSCRIBERS_MAX);
        }
        /* The slot is given back when the request is freed: after the job, and also when its
         * thread could not start (request_start_job has answered then). */
        return request_start_job(req, subscribe_job, m, subscriber_done);
}

static int metrics_job(Request *req, void *data, json_object **ret_result, SeatError **ret_error) {
        Manager *m = request_manager(req);
        Metrics *mx = seat_manager_metrics(m->seats);
        _cleanup_json_ json_object *seats = seat_manager_list_json(m->seats);
        json_object *o = json_object_new_object(), *by_state = json_object_new_object(), *denied = json_object_new_object();
        json_object *pools = json_object_new_object(), *status = NULL;
        if (!o || !by_state || !denied || !pools || !seats) {
                json_object_put(o);
                json_object_put(by_state);
                json_object_put(denied);
                json_object_put(pools);
                return -ENOMEM;
        }
        for (SeatState st = SEAT_PROVISIONING; st <= SEAT_RELEASED; st++)
                json_object_object_add(by_state, seat_state_to_string(st), json_object_new_int64(0));
        for (size_t i = 0; i < json_object_array_length(seats); i++) {
                json_object *s = json_object_array_get_idx(seats, i), *v, *net, *d;
                const char *state = json_object_object_get_ex(s, "state", &v) ? json_object_get_string(v) : "unknown";
                json_object *n = json_object_object_get(by_state, state);
                json_object_object_add(by_state, state, json_object_new_int64((n ? json_object_get_int64(n) : 0) + 1));
                if (json_object_object_get_ex(s, "network", &net) && json_object_object_get_ex(net, "denied_packets", &d) &&
                    json_object_object_get_ex(s, "id", &v))
                        json_object_object_add(denied, json_object_get_string(v), json_object_get(d));
        }
        json_object_object_add(o, "seats_by_state", by_state);
        json_object_object_add(o, "latency", metrics_latency_json(mx));
        json_object_object_add(o, "calls_total", json_object_new_int64((int64_t) atomic_load(&mx->calls)));
        json_object_object_add(o, "egress_denied_packets", denied);
        json_object_object_add(o, "seal", seal_json(m));
        /* {image: {ready, target}}: a pool per image */
        if (pool_manager_status(m->pools, &status) >= 0) {
                json_object *arr = json_object_object_get(status, "pools");
                for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
                        json_object *p = json_object_array_get_idx(arr, i), *e = json_object_new_object();
                        json_object_object_add(e, "ready", json_object_get(json_object_object_get(p, "ready")));
                        json_object_object_add(e, "target", json_object_get(json_object_object_get(p, "size")));
                        json_object_object_add(pools, json_object_get_string(json_object_object_get(p, "image")), e);
                }
                json_object_put(status);
        }
        json_object_object_add(o, "pools", pools);
        json_object_object_add(o, "host", host_json(m->config));
        *ret_result = o;
        return 0;
}

static int metrics_method(Request *req) {
        return request_start_job(req, metrics_job, NULL, NULL);
}

static const Method facilitator_methods[] = {
        { "events.subscribe", events_subscribe_method, true, true },
        { "metrics", metrics_method, true, true },
};

int facilitator_methods_init(Manager *m, SeatError **ret_error) {
        int r = server_add_methods(m->server, facilitator_methods, ELEMENTSOF(facilitator_methods));
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot register the facilitator methods: %s", strerror(-r));
        return 0;
}
