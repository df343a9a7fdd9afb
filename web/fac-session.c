/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fac-session.h"

struct FacSessions {
        size_t max;
        int64_t idle_ms, max_age_ms;
        FacSession *s;
};

FacSessions *fac_sessions_new(size_t max, int64_t idle_ms, int64_t max_age_ms) {
        if (sodium_init() < 0 || max == 0)
                return NULL;
        FacSessions *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->s = calloc(max, sizeof(FacSession));
        if (!t->s) {
                free(t);
                return NULL;
        }
        t->max = max;
        t->idle_ms = idle_ms;
        t->max_age_ms = max_age_ms;
        return t;
}

FacSessions *fac_sessions_free(FacSessions *t) {
        if (!t)
                return NULL;
        sodium_memzero(t->s, t->max * sizeof(FacSession));
        free(t->s);
        free(t);
        return NULL;
}

void fac_session_close(FacSessions *t, FacSession *s) {
        (void) t;
        if (s)
                sodium_memzero(s, sizeof(*s));
}

static bool expired(const FacSessions *t, const FacSession *s, int64_t now_ms) {
        return now_ms - s->last_ms > t->idle_ms || now_ms - s->created_ms > t->max_age_ms;
}

static void random_id(char out[WEB_SESSION_ID_LEN + 1]) {
        uint8_t raw[32];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2base64(out, WEB_SESSION_ID_LEN + 1, raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        sodium_memzero(raw, sizeof(raw));
}

int fac_session_open(FacSessions *t, const char *name, int64_t now_ms, char ret_id[WEB_SESSION_ID_LEN + 1]) {
        FacSession *slot = NULL, *oldest = NULL;
        if (!fac_name_valid(name))
                return -EINVAL;
        for (size_t i = 0; i < t->max; i++) {
                FacSession *s = &t->s[i];
                if (s->used && expired(t, s, now_ms))
                        fac_session_close(t, s);
                if (!s->used) {
                        if (!slot)
                                slot = s;
                } else if (!oldest || s->last_ms < oldest->last_ms)
                        oldest = s;
        }
        if (!slot) {
                /* Only a right password gets this far: dropping the longest idle one is
                 * better than locking every facilitator out. */
                if (!oldest)
                        return -ENOSPC;
                fac_session_close(t, oldest);
                slot = oldest;
        }
        random_id(slot->id);
        random_id(slot->csrf);
        snprintf(slot->name, sizeof(slot->name), "%s", name);
        slot->created_ms = slot->last_ms = now_ms;
        slot->used = true;
        memcpy(ret_id, slot->id, WEB_SESSION_ID_LEN + 1);
        return 0;
}

FacSession *fac_session_find(FacSessions *t, const char *id, int64_t now_ms) {
        FacSession *hit = NULL;
        if (!web_session_id_valid(id))
                return NULL;
        for (size_t i = 0; i < t->max; i++) {
                FacSession *s = &t->s[i];
                if (s->used && sodium_memcmp(s->id, id, WEB_SESSION_ID_LEN) == 0)
                        hit = s;
        }
        if (!hit)
                return NULL;
        if (expired(t, hit, now_ms)) {
                fac_session_close(t, hit);
                return NULL;
        }
        hit->last_ms = now_ms;
        return hit;
}

bool fac_session_csrf_ok(const FacSession *s, const char *token) {
        return s && s->used && web_session_id_valid(token) && sodium_memcmp(s->csrf, token, FAC_CSRF_LEN) == 0;
}
