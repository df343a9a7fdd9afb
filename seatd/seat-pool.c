/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-pool.c: pooled seats: kept READY for nobody, claimed by provision. */
#include "seat-internal.h"

/* ---- pools: seats kept READY for nobody, claimed by provision (docs/pools.md) ---- */

void seat_manager_set_pool_fn(SeatManager *m, SeatPoolFn fn, void *userdata) {
        pthread_mutex_lock(&m->lock);
        m->pool_fn = fn;
        m->pool_userdata = userdata;
        pthread_mutex_unlock(&m->lock);
}

void pool_notify(SeatManager *m, SeatPoolEvent ev, const char *image, const char *egress) {
        pthread_mutex_lock(&m->lock);
        SeatPoolFn fn = m->pool_fn;
        void *u = m->pool_userdata;
        pthread_mutex_unlock(&m->lock);
        if (fn)
                fn(ev, image, egress, u);
}

const char *seat_manager_egress_name(SeatManager *m, const char *egress) {
        if (!m->config->network)
                return "";
        return egress ? egress : m->config->default_egress;
}

bool seat_pooled(Seat *s) {
        pthread_mutex_lock(&s->m->lock);
        bool p = s->pooled;
        pthread_mutex_unlock(&s->m->lock);
        return p;
}

int seat_provision_pooled(SeatManager *m, const char *image, const char *egress, SeatError **ret_error) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        char *token = NULL;
        if (!image_name_valid(image))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an image name", image);
        int r = provision_new(m, image, "", egress, true, true, &s, &token, ret_error);
        if (token) /* nobody ever learns it: a claim makes a new one */
                sodium_memzero(token, strlen(token));
        free(token);
        return r;
}

int seat_manager_pooled(SeatManager *m, SeatPoolEntry **ret, size_t *ret_n) {
        pthread_mutex_lock(&m->lock);
        SeatPoolEntry *e = calloc(m->n_seats + 1, sizeof(*e));
        size_t n = 0;
        for (size_t i = 0; e && i < m->n_seats; i++) {
                const Seat *s = m->seats[i];
                if (!s->pooled || seat_state((Seat *) s) != SEAT_READY)
                        continue;
                snprintf(e[n].image, sizeof(e[n].image), "%s", s->rec.image);
                snprintf(e[n].egress, sizeof(e[n].egress), "%s", s->rec.egress);
                n++;
        }
        pthread_mutex_unlock(&m->lock);
        if (!e)
                return -ENOMEM;
        *ret = e;
        *ret_n = n;
        return 0;
}

void seat_manager_usage(SeatManager *m, unsigned *ret_seats, uint64_t *ret_memory_mib) {
        uint64_t mem = 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++)
                mem += m->seats[i]->memory_mib;
        *ret_seats = (unsigned) m->n_seats + m->booting;
        pthread_mutex_unlock(&m->lock);
        *ret_memory_mib = mem;
}

/* Under the manager's lock a pooled seat stops being pooled: whoever took it is the only
 * one who ever will (two claims never get one seat). The oldest first; NULL: none. */
Seat *seat_pool_take(SeatManager *m, const char *image, const char *egress) {
        Seat *best = NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++) {
                Seat *s = m->seats[i];
                if (!s->pooled || seat_state(s) != SEAT_READY || __atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE) ||
                    strcmp(s->rec.image, image) != 0 || strcmp(s->rec.egress, egress) != 0)
                        continue;
                if (!best || s->pool_seq < best->pool_seq)
                        best = s;
        }
        if (best) {
                best->pooled = false;
                best->refs++;
        }
        pthread_mutex_unlock(&m->lock);
        return best;
}

Seat *seat_pool_take_broken(SeatManager *m) {
        Seat *r = NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats && !r; i++)
                if (m->seats[i]->pool_broken) {
                        r = m->seats[i];
                        r->pool_broken = false;
                        r->refs++;
                }
        pthread_mutex_unlock(&m->lock);
        return r;
}

/* Bind a seat just taken from its pool to a participant: only after its agent answers a
 * ping, with a new token, recorded in libvirt before anyone learns the token. A seat that
 * fails is faulted and left to the pool to release (never handed out). */
int pool_claim(SeatManager *m, Seat *s, const char *participant, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        SeatRecord old;
        int r;
        pthread_mutex_lock(&s->lock);
        old = s->rec;
        if (seat_state(s) == SEAT_RELEASED) {
                /* An operator released it while it was being taken: nothing to fault. */
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, ESTALE, "seat '%s' was released meanwhile", s->rec.id);
        }
        if (seat_state(s) != SEAT_READY || !s->agent)
                r = seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        else if ((r = agent_client_ping(s->agent, POOL_CLAIM_PING_MS, ret_error)) < 0)
                (void) seat_error_wrap(ret_error, "its agent did not answer a ping within %d ms", POOL_CLAIM_PING_MS);
        else if ((r = new_token(s, false, &token)) >= 0) {
                snprintf(s->rec.participant, sizeof(s->rec.participant), "%s", participant);
                s->rec.pooled = false;
                r = domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (r < 0) {
                _cleanup_free_ char *why = NULL;
                /* Only what the claim changed: the rest of s->rec (its id, its image) is read
                 * by others without s->lock, and must not be written even with equal bytes. */
                pthread_mutex_lock(&s->ticket_lock);
                memcpy(s->rec.token_hash, old.token_hash, sizeof(old.token_hash));
                memcpy(s->rec.participant, old.participant, sizeof(old.participant));
                s->rec.pooled = old.pooled;
                pthread_mutex_unlock(&s->ticket_lock);
                if (asprintf(&why, "failed its health check when claimed from the pool: %s",
                             *ret_error ? (*ret_error)->message : strerror(-r)) < 0)
                        why = NULL;
                seat_fault(s, why ? why : "failed its health check when claimed from the pool");
                pthread_mutex_lock(&m->lock);
                s->pool_broken = true;
                pthread_mutex_unlock(&m->lock);
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        pthread_mutex_lock(&m->lock);
        s->from_pool = true;
        pthread_mutex_unlock(&m->lock);
        seat_view_publish(s); /* its participant */
        json_object *o = json_object_new_object();
        json_object_object_add(o, "participant", json_object_new_string(participant));
        (void) seat_audit(s, "claim", o);
        json_object_put(o);
        pthread_mutex_unlock(&s->lock);
        *ret_token = TAKE_PTR(token);
        return 0;
}
