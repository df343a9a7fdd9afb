/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-status.c: what status and console show: the view a seat publishes under its short lock, and status as JSON. */
#include "seat-internal.h"

static char *strdup_or_null(const char *p) {
        return p ? strdup(p) : NULL;
}

/* Copy what status shows into s->view. The caller holds s->lock (or s is not shared yet):
 * every field read here is written only by the holder of s->lock (disk_virtual also under
 * the manager's lock, for the disk admission of other seats). A string that cannot be
 * copied shows as absent until the next publish. */
void seat_view_publish(Seat *s) {
        SeatView v = { .overlay = strdup_or_null(s->overlay), .console_log = strdup_or_null(s->console_log),
                       .fault = strdup_or_null(s->fault), .seal_fault = strdup_or_null(s->seal_fault),
                       .confinement = s->confinement, .generation = s->rec.generation,
                       .image_version = s->rec.image_version };
        const char *name = s->dom ? virDomainGetName(s->dom) : NULL;
        (void) snprintf(v.domain, sizeof(v.domain), "%s", name ? name : "");
        (void) snprintf(v.participant, sizeof(v.participant), "%s", s->rec.participant);
        pthread_mutex_lock(&s->m->lock);
        v.disk_virtual = s->disk_virtual;
        pthread_mutex_unlock(&s->m->lock);
        pthread_mutex_lock(&s->view_lock);
        SeatView old = s->view;
        s->view = v;
        pthread_mutex_unlock(&s->view_lock);
        seat_view_done(&old);
        changes_bump(&s->m->changes);
}

/* A copy of s->view, from any thread, without waiting for s->lock (seat_view_done() it). */
static int seat_view_get(Seat *s, SeatView *ret) {
        pthread_mutex_lock(&s->view_lock);
        SeatView v = s->view;
        v.overlay = strdup_or_null(s->view.overlay);
        v.console_log = strdup_or_null(s->view.console_log);
        v.fault = strdup_or_null(s->view.fault);
        v.seal_fault = strdup_or_null(s->view.seal_fault);
        bool lost = (s->view.overlay && !v.overlay) || (s->view.console_log && !v.console_log) ||
                    (s->view.fault && !v.fault) || (s->view.seal_fault && !v.seal_fault);
        pthread_mutex_unlock(&s->view_lock);
        if (lost) {
                seat_view_done(&v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

bool seat_from_pool(Seat *s) {
        pthread_mutex_lock(&s->m->lock);
        bool r = s->from_pool;
        pthread_mutex_unlock(&s->m->lock);
        return r;
}

int seat_audit_path(Seat *s, char **ret) {
        SeatView v;
        int r = seat_view_get(s, &v);
        if (r < 0)
                return r;
        r = asprintf(ret, "%s/%s/audit-g%" PRId64 ".log", s->m->seats_dir, s->rec.id, v.generation) < 0 ? -ENOMEM : 0;
        seat_view_done(&v);
        return r;
}

int seat_console_path(Seat *s, char **ret) {
        SeatView v;
        int r = seat_view_get(s, &v);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v.console_log);
        seat_view_done(&v);
        return 0;
}

int seat_to_json(Seat *s, json_object **ret) {
        char created[32];
        /* What changes under s->lock, as last published: never s's own fields, which a
         * reset or a fault may be freeing right now (see SeatView). */
        SeatView v;
        if (seat_view_get(s, &v) < 0)
                return -ENOMEM;
        json_object *o = json_object_new_object();
        if (!o || rfc3339_format(s->rec.created, created, sizeof(created)) < 0) {
                json_object_put(o);
                seat_view_done(&v);
                return -ENOMEM;
        }
        json_object_object_add(o, "id", json_object_new_string(s->rec.id));
        json_object_object_add(o, "state", json_object_new_string(seat_state_to_string(seat_state(s))));
        json_object_object_add(o, "image", json_object_new_string(s->rec.image));
        json_object_object_add(o, "image_version", json_object_new_int64(v.image_version));
        json_object_object_add(o, "participant", json_object_new_string(v.participant));
        pthread_mutex_lock(&s->m->lock);
        if (s->pooled)
                json_object_object_add(o, "pool", json_object_new_boolean(true));
        if (s->from_pool)
                json_object_object_add(o, "from_pool", json_object_new_boolean(true));
        pthread_mutex_unlock(&s->m->lock);
        json_object_object_add(o, "generation", json_object_new_int64(v.generation));
        json_object_object_add(o, "created", json_object_new_string(created));
        json_object_object_add(o, "domain", json_object_new_string(v.domain));
        int64_t last_call = __atomic_load_n(&s->last_call, __ATOMIC_ACQUIRE);
        char when[32];
        if (last_call > 0 && rfc3339_format(last_call, when, sizeof(when)) >= 0)
                json_object_object_add(o, "last_call", json_object_new_string(when));
        if (v.confinement.known) {
                json_object *cf = json_object_new_object();
                json_object_object_add(cf, "uid", json_object_new_int64((int64_t) v.confinement.uid));
                json_object_object_add(cf, "seccomp", json_object_new_boolean(v.confinement.seccomp));
                json_object_object_add(cf, "mac", json_object_new_string(v.confinement.mac[0] ? v.confinement.mac : "none"));
                json_object_object_add(o, "confinement", cf);
        }
        if (v.disk_virtual) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "virtual_bytes", json_object_new_int64((int64_t) v.disk_virtual));
                json_object_object_add(d, "used_bytes", json_object_new_int64((int64_t) file_allocated(v.overlay)));
                json_object_object_add(o, "disk", d);
        }
        if (v.fault)
                json_object_object_add(o, "fault", json_object_new_string(v.fault));
        if (v.seal_fault)
                json_object_object_add(o, "evidence_fault", json_object_new_string(v.seal_fault));
        seat_view_done(&v);
        json_object *net = NULL;
        pthread_mutex_lock(&s->m->lock);
        if (s->net && seatnet_to_json(s->m->net, s->net, &net) >= 0) {
                json_object_object_add(net, "paused", json_object_new_boolean(__atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE)));
                json_object_object_add(net, "tamper_events", json_object_new_int64(s->tamper_count));
                if (s->last_tamper)
                        json_object_object_add(net, "last_tamper", json_object_get(s->last_tamper));
                json_object *cap = seat_capture_to_json_locked(s);
                if (cap)
                        json_object_object_add(net, "capture", cap);
        }
        pthread_mutex_unlock(&s->m->lock);
        json_object_object_add(o, "network", net);
        /* Warm reset: how this generation came up, and what the next reset can restore. */
        pthread_mutex_lock(&s->warm_lock);
        json_object_object_add(o, "reset_mode", json_object_new_string(s->reset_mode ? s->reset_mode : "unknown"));
        if (s->reset_reason)
                json_object_object_add(o, "reset_reason", json_object_new_string(s->reset_reason));
        json_object_object_add(o, "warm_standby",
                               json_object_new_string(!s->m->config->warm_reset ? "off (warm_reset = false)"
                                                      : s->warm_standby ? s->warm_standby : "none"));
        if (s->teardown_fault)
                json_object_object_add(o, "teardown_fault", json_object_new_string(s->teardown_fault));
        if (s->progress)
                json_object_object_add(o, "progress", json_object_new_string(s->progress));
        pthread_mutex_unlock(&s->warm_lock);
        *ret = o;
        return 0;
}

json_object *seat_manager_list_json(SeatManager *m) {
        Seat **all = seat_manager_all(m);
        json_object *arr = json_object_new_array();
        if (!all || !arr) {
                free(all);
                json_object_put(arr);
                return NULL;
        }
        for (Seat **s = all; *s; s++) {
                json_object *o = NULL;
                if (seat_to_json(*s, &o) >= 0)
                        json_object_array_add(arr, o);
                seat_unref(*s);
        }
        free(all);
        return arr;
}
