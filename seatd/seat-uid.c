/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-uid.c: each seat slot's pair of QEMU uids (one per machine identity) from qemu_uid_range: taken, adopted, released. */
#include "seat-internal.h"

/* ---- QEMU uids: each seat machine's QEMU runs as a uid of its own (docs/security.md) ---- */

int uid_table_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
        uid_t first = 0, last = 0;
        if (seat_config_parse_uid_range(config->qemu_uid_range, &first, &last) < 0)
                return seat_error_set(ret_error, EINVAL, "invalid qemu_uid_range '%s'", config->qemu_uid_range);
        m->uid_first = first + 1; /* the first is the host check's probe guest */
        m->n_uid_slots = (size_t) (last - first) / 2;
        m->uid_slot_used = calloc(m->n_uid_slots, sizeof(bool));
        return m->uid_slot_used ? 0 : -ENOMEM;
}

/* The uid identity k of the seat's slot runs as: the participant's machine and the standby
 * state made beside it (the other identity) never share one, so even the slot's own live
 * QEMU cannot reach the state its next session restores. */
uid_t identity_uid(const SeatRecord *rec, SeatIdentity k) {
        return (uid_t) rec->qemu_uid + (uid_t) k;
}

/* The slot of the table a uid falls in, or -1 outside the range. */
static long uid_slot_of(const SeatManager *m, int64_t uid) {
        if (uid < (int64_t) m->uid_first)
                return -1;
        uint64_t i = (uint64_t) (uid - (int64_t) m->uid_first) / 2;
        return i < m->n_uid_slots ? (long) i : -1;
}

/* A free pair for the seat, held until it is freed (release, or a failed provision). */
int seat_uid_take(SeatManager *m, Seat *s, SeatError **ret_error) {
        if (s->uid_slot[0] >= 0)
                return 0;
        pthread_mutex_lock(&m->lock);
        size_t i = 0;
        while (i < m->n_uid_slots && m->uid_slot_used[i])
                i++;
        if (i < m->n_uid_slots)
                m->uid_slot_used[i] = true;
        pthread_mutex_unlock(&m->lock);
        if (i == m->n_uid_slots)
                return seat_error_set(ret_error, EUSERS,
                                      "no free QEMU uid pair in qemu_uid_range '%s' (room for %zu seats): release a seat or widen the range",
                                      m->config->qemu_uid_range, m->n_uid_slots);
        s->uid_slot[0] = (long) i;
        s->rec.qemu_uid = (int64_t) m->uid_first + 2 * (int64_t) i;
        return 0;
}

/* An adopted seat's recorded uids, which its running QEMU has: taken in the table, or
 * -EBUSY when another seat holds them (two seats on one uid is what this prevents). A
 * pair outside the range (it was changed since) cannot collide with one handed out now. */
static int seat_uid_adopt(SeatManager *m, Seat *s) {
        long a = uid_slot_of(m, s->rec.qemu_uid), b = uid_slot_of(m, s->rec.qemu_uid + 1);
        int r = 0;
        if (b == a)
                b = -1;
        pthread_mutex_lock(&m->lock);
        if ((a >= 0 && m->uid_slot_used[a]) || (b >= 0 && m->uid_slot_used[b]))
                r = -EBUSY;
        else {
                if (a >= 0)
                        m->uid_slot_used[a] = true;
                if (b >= 0)
                        m->uid_slot_used[b] = true;
                s->uid_slot[0] = a;
                s->uid_slot[1] = b;
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

void seat_uid_release(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->lock);
        for (SeatIdentity k = 0; k < 2; k++)
                if (s->uid_slot[k] >= 0 && (size_t) s->uid_slot[k] < m->n_uid_slots)
                        m->uid_slot_used[s->uid_slot[k]] = false;
        pthread_mutex_unlock(&m->lock);
        s->uid_slot[0] = s->uid_slot[1] = -1;
}

/* Its uid pair back in the table. A seat from before per-seat uids (libvirt's one QEMU
 * user) gets a pair now: its standby state and its next machines run under it. */
int adopt_uids(SeatManager *m, Seat *s, SeatError **ret_error) {
        if (s->rec.qemu_uid == 0) {
                int r = seat_uid_take(m, s, ret_error);
                return r < 0 ? r : domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (seat_uid_adopt(m, s) < 0)
                return seat_error_set(ret_error, EBUSY, "its QEMU uid %" PRId64 " is recorded for another seat too",
                                      s->rec.qemu_uid);
        return 0;
}
