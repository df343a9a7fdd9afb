/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fac-handouts.c: the table of handouts being made and made (fac-handouts.h). */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "facilitators.h"
#include "fac-handouts.h"
#include "slots.h"

typedef struct Handout {
        bool used, made;
        char id[WEB_SESSION_ID_LEN + 1];
        char owner[FAC_NAME_MAX + 1];
        size_t done, total;
        char *page; /* made: the page, wiped when dropped (one-time links) */
        size_t len;
        int64_t made_ms; /* monotonic: a clock step neither keeps nor drops a page early */
} Handout;

struct FacHandouts {
        pthread_mutex_t lock;
        int64_t keep_ms;
        /* at most one being made, beside the kept ones */
        Handout slot[FAC_HANDOUTS_KEPT + 1];
};

static void drop(Handout *o) {
        if (o->page) {
                sodium_memzero(o->page, o->len);
                free(o->page);
        }
        sodium_memzero(o, sizeof(*o));
}

/* Made handouts past keep_ms go; one being made never does. Under the lock. */
static void expire(FacHandouts *h, int64_t now_ms) {
        for (size_t i = 0; i < ELEMENTSOF(h->slot); i++)
                if (h->slot[i].used && h->slot[i].made && now_ms - h->slot[i].made_ms >= h->keep_ms)
                        drop(&h->slot[i]);
}

/* The slot of id, compared in constant time (an ID is what lets its page be read). */
static Handout *find(FacHandouts *h, const char *id) {
        if (!id || strlen(id) != WEB_SESSION_ID_LEN)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(h->slot); i++)
                if (h->slot[i].used && sodium_memcmp(h->slot[i].id, id, WEB_SESSION_ID_LEN) == 0)
                        return &h->slot[i];
        return NULL;
}

FacHandouts *fac_handouts_new(int64_t keep_ms) {
        FacHandouts *h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        pthread_mutex_init(&h->lock, NULL);
        h->keep_ms = keep_ms;
        return h;
}

FacHandouts *fac_handouts_free(FacHandouts *h) {
        if (!h)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(h->slot); i++)
                drop(&h->slot[i]);
        pthread_mutex_destroy(&h->lock);
        return mfree(h);
}

int fac_handouts_start(FacHandouts *h, const char *owner, size_t total, int64_t now_ms,
                       char ret_id[WEB_SESSION_ID_LEN + 1]) {
        if (!owner || strlen(owner) > FAC_NAME_MAX)
                return -EINVAL;
        pthread_mutex_lock(&h->lock);
        expire(h, now_ms);
        Handout *free_slot = NULL;
        size_t kept = 0;
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(h->slot); i++) {
                if (!h->slot[i].used) {
                        if (!free_slot)
                                free_slot = &h->slot[i];
                } else if (!h->slot[i].made)
                        r = -EBUSY;
                else
                        kept++;
        }
        if (r == 0 && (kept >= FAC_HANDOUTS_KEPT || !free_slot))
                r = -ENOSPC;
        if (r == 0) {
                *free_slot = (Handout) { .used = true, .total = total };
                slot_random_id(free_slot->id);
                snprintf(free_slot->owner, sizeof(free_slot->owner), "%s", owner);
                memcpy(ret_id, free_slot->id, sizeof(free_slot->id));
        }
        pthread_mutex_unlock(&h->lock);
        return r;
}

void fac_handouts_progress(FacHandouts *h, const char *id, size_t done) {
        pthread_mutex_lock(&h->lock);
        Handout *o = find(h, id);
        if (o && !o->made)
                o->done = done < o->total ? done : o->total;
        pthread_mutex_unlock(&h->lock);
}

void fac_handouts_finish(FacHandouts *h, const char *id, char *page, size_t len, int64_t now_ms) {
        pthread_mutex_lock(&h->lock);
        Handout *o = find(h, id);
        if (o && !o->made) {
                o->made = true;
                o->made_ms = now_ms;
                o->done = o->total;
                o->page = page;
                o->len = page ? len : 0;
                page = NULL;
        }
        pthread_mutex_unlock(&h->lock);
        if (page) { /* (no such handout: nobody will read it) */
                sodium_memzero(page, len);
                free(page);
        }
}

void fac_handouts_drop(FacHandouts *h, const char *id) {
        pthread_mutex_lock(&h->lock);
        Handout *o = find(h, id);
        if (o)
                drop(o);
        pthread_mutex_unlock(&h->lock);
}

int fac_handouts_get(FacHandouts *h, const char *id, const char *owner, int64_t now_ms, FacHandoutView *ret) {
        int r = 0;
        *ret = (FacHandoutView) { 0 };
        pthread_mutex_lock(&h->lock);
        expire(h, now_ms);
        Handout *o = find(h, id);
        if (!o || !owner || strcmp(o->owner, owner) != 0)
                r = -ENOENT;
        else {
                *ret = (FacHandoutView) { .done = o->done, .total = o->total, .made = o->made };
                if (o->made && o->page) {
                        ret->page = malloc(o->len ? o->len : 1);
                        if (!ret->page)
                                r = -ENOMEM;
                        else {
                                memcpy(ret->page, o->page, o->len);
                                ret->len = o->len;
                        }
                }
        }
        pthread_mutex_unlock(&h->lock);
        return r;
}
