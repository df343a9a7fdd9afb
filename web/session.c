/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "session.h"

struct SessionTable {
        size_t max;
        int64_t idle_ms, max_age_ms;
        WebSession *s;
};

SessionTable *session_table_new(size_t max, int64_t idle_ms, int64_t max_age_ms) {
        if (sodium_init() < 0 || max == 0)
                return NULL;
        SessionTable *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->s = calloc(max, sizeof(WebSession));
        if (!t->s) {
                free(t);
                return NULL;
        }
        t->max = max;
        t->idle_ms = idle_ms;
        t->max_age_ms = max_age_ms;
        return t;
}

SessionTable *session_table_free(SessionTable *t) {
        if (!t)
                return NULL;
        sodium_memzero(t->s, t->max * sizeof(WebSession));
        free(t->s);
        free(t);
        return NULL;
}

void session_close(SessionTable *t, WebSession *s) {
        if (s)
                sodium_memzero(s, sizeof(*s));
}

static bool expired(const SessionTable *t, const WebSession *s, int64_t now_ms) {
        return now_ms - s->last_ms > t->idle_ms || now_ms - s->created_ms > t->max_age_ms;
}

int session_open(SessionTable *t, const char *seat, const char *token, int64_t now_ms,
                 char ret_id[WEB_SESSION_ID_LEN + 1]) {
        WebSession *slot = NULL, *oldest = NULL;
        if (!web_seat_id_valid(seat) || !web_token_valid(token))
                return -EINVAL;
        for (size_t i = 0; i < t->max; i++) {
                WebSession *s = &t->s[i];
                if (s->used && expired(t, s, now_ms))
                        session_close(t, s);
                if (!s->used) {
                        if (!slot)
                                slot = s;
                } else if (!oldest || s->last_ms < oldest->last_ms)
                        oldest = s;
        }
        if (!slot) {
                /* Full: the longest idle goes (a participant who left); a flood of logins
                 * needs valid tokens and passes the rate limits first. */
                if (!oldest)
                        return -ENOSPC;
                session_close(t, oldest);
                slot = oldest;
        }
        uint8_t raw[32];
        randombytes_buf(raw, sizeof(raw));
        sodium_bin2base64(slot->id, sizeof(slot->id), raw, sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        sodium_memzero(raw, sizeof(raw));
        snprintf(slot->seat, sizeof(slot->seat), "%s", seat);
        snprintf(slot->token, sizeof(slot->token), "%s", token);
        slot->created_ms = slot->last_ms = now_ms;
        slot->used = true;
        memcpy(ret_id, slot->id, WEB_SESSION_ID_LEN + 1);
        return 0;
}

WebSession *session_find(SessionTable *t, const char *id, int64_t now_ms) {
        WebSession *hit = NULL;
        if (!web_session_id_valid(id))
                return NULL;
        /* Every slot is compared, in constant time each: the time taken says nothing about
         * which ids exist. */
        for (size_t i = 0; i < t->max; i++) {
                WebSession *s = &t->s[i];
                if (s->used && sodium_memcmp(s->id, id, WEB_SESSION_ID_LEN) == 0)
                        hit = s;
        }
        if (!hit)
                return NULL;
        if (expired(t, hit, now_ms)) {
                session_close(t, hit);
                return NULL;
        }
        hit->last_ms = now_ms;
        return hit;
}

size_t session_count(const SessionTable *t) {
        size_t n = 0;
        for (size_t i = 0; i < t->max; i++)
                n += t->s[i].used;
        return n;
}
