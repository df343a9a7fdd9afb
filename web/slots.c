/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

struct SlotTable {
        size_t max, elem_size;
        int64_t idle_ms, max_age_ms;
        unsigned char *slots; /* max elements of elem_size, each beginning with SLOT_HEAD */
};

static SlotHead *slot_at(const SlotTable *t, size_t i) {
        return (SlotHead *) (t->slots + i * t->elem_size);
}

SlotTable *slot_table_new(size_t max, size_t elem_size, int64_t idle_ms, int64_t max_age_ms) {
        if (sodium_init() < 0 || max == 0 || elem_size < sizeof(SlotHead))
                return NULL;
        _cleanup_free_ SlotTable *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->slots = calloc(max, elem_size);
        if (!t->slots)
                return NULL;
        *t = (SlotTable) { .max = max, .elem_size = elem_size, .idle_ms = idle_ms, .max_age_ms = max_age_ms, .slots = t->slots };
        return TAKE_PTR(t);
}

SlotTable *slot_table_free(SlotTable *t) {
        if (!t)
                return NULL;
        sodium_memzero(t->slots, t->max * t->elem_size);
        free(t->slots);
        return mfree(t);
}

void slot_close(SlotTable *t, SlotHead *s) {
        if (s)
                sodium_memzero(s, t->elem_size);
}

static bool expired(const SlotTable *t, const SlotHead *s, int64_t now_ms) {
        return now_ms - s->last_ms > t->idle_ms || now_ms - s->created_ms > t->max_age_ms;
}

void slot_random_id(char out[WEB_SESSION_ID_LEN + 1]) {
        uint8_t raw[32];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2base64(out, WEB_SESSION_ID_LEN + 1, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        sodium_memzero(raw, sizeof(raw));
}

SlotHead *slot_open(SlotTable *t, int64_t now_ms) {
        SlotHead *slot = NULL, *oldest = NULL;
        for (size_t i = 0; i < t->max; i++) {
                SlotHead *s = slot_at(t, i);
                if (s->used && expired(t, s, now_ms))
                        slot_close(t, s);
                if (!s->used) {
                        if (!slot)
                                slot = s;
                } else if (!oldest || s->last_ms < oldest->last_ms)
                        oldest = s;
        }
        /* Full: the longest idle goes (someone who left). Only a right token or password
         * gets this far, past the rate limits, so this cannot lock everyone out. */
        if (!slot) {
                if (!oldest)
                        return NULL;
                slot_close(t, oldest);
                slot = oldest;
        }
        slot_random_id(slot->id);
        slot->created_ms = slot->last_ms = now_ms;
        slot->used = true;
        return slot;
}

SlotHead *slot_find(SlotTable *t, const char *id, int64_t now_ms) {
        SlotHead *hit = NULL;
        if (!web_session_id_valid(id))
                return NULL;
        for (size_t i = 0; i < t->max; i++) {
                SlotHead *s = slot_at(t, i);
                if (s->used && sodium_memcmp(s->id, id, WEB_SESSION_ID_LEN) == 0)
                        hit = s;
        }
        if (!hit)
                return NULL;
        if (expired(t, hit, now_ms)) {
                slot_close(t, hit);
                return NULL;
        }
        hit->last_ms = now_ms;
        return hit;
}

size_t slot_count(const SlotTable *t) {
        size_t n = 0;
        for (size_t i = 0; i < t->max; i++)
                n += slot_at(t, i)->used;
        return n;
}
