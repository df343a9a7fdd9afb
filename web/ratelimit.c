/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "ratelimit.h"

typedef struct Slot {
        char key[RATE_KEY_MAX];
        double tokens;
        int64_t last_ms;
        bool used;
} Slot;

struct RateLimit {
        double capacity;
        double per_ms;
        size_t n;
        Slot slots[];
};

RateLimit *rate_limit_new(long per_minute, size_t slots) {
        if (per_minute <= 0 || slots == 0 || slots > 1u << 20)
                return NULL;
        RateLimit *r = calloc(1, sizeof(*r) + slots * sizeof(Slot));
        if (!r)
                return NULL;
        r->capacity = (double) per_minute;
        r->per_ms = (double) per_minute / 60000.0;
        r->n = slots;
        return r;
}

RateLimit *rate_limit_free(RateLimit *r) {
        return mfree(r);
}

static double refilled(const RateLimit *r, const Slot *s, int64_t now_ms) {
        double t = s->tokens + (double) (now_ms > s->last_ms ? now_ms - s->last_ms : 0) * r->per_ms;
        return t > r->capacity ? r->capacity : t;
}

static Slot *find(RateLimit *r, const char *key, int64_t now_ms, Slot **ret_free) {
        Slot *free_slot = NULL;
        for (size_t i = 0; i < r->n; i++) {
                Slot *c = &r->slots[i];
                if (c->used && !strcmp(c->key, key))
                        return c;
                /* A full bucket says nothing a fresh one would not: its slot is free. */
                if (!free_slot && (!c->used || refilled(r, c, now_ms) >= r->capacity))
                        free_slot = c;
        }
        if (ret_free)
                *ret_free = free_slot;
        return NULL;
}

/* n attempts as tokens: at most a bucket. */
static double cost(const RateLimit *r, unsigned n) {
        return (double) n < r->capacity ? (double) n : r->capacity;
}

bool rate_limit_take(RateLimit *r, const char *key, unsigned n, int64_t now_ms) {
        Slot *free_slot = NULL;
        if (strlen(key) >= RATE_KEY_MAX)
                return false;
        Slot *s = find(r, key, now_ms, &free_slot);
        if (!s) {
                if (!free_slot)
                        return false;
                s = free_slot;
                memset(s, 0, sizeof(*s));
                snprintf(s->key, sizeof(s->key), "%s", key);
                s->used = true;
                s->tokens = r->capacity;
                s->last_ms = now_ms;
        }
        s->tokens = refilled(r, s, now_ms);
        s->last_ms = now_ms > s->last_ms ? now_ms : s->last_ms;
        if (s->tokens < cost(r, n))
                return false;
        s->tokens -= cost(r, n);
        return true;
}

void rate_limit_give_back(RateLimit *r, const char *key, unsigned n, int64_t now_ms) {
        Slot *s = strlen(key) < RATE_KEY_MAX ? find(r, key, now_ms, NULL) : NULL;
        if (!s)
                return; /* (its slot was full again and went to another key: nothing owed) */
        s->tokens = refilled(r, s, now_ms) + cost(r, n);
        if (s->tokens > r->capacity)
                s->tokens = r->capacity;
        s->last_ms = now_ms > s->last_ms ? now_ms : s->last_ms;
}
