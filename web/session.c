/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Participant sessions: the shared slot table (slots.c) holding a seat and its token. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "session.h"

SessionTable *session_table_new(size_t max, int64_t idle_ms, int64_t max_age_ms) {
        return slot_table_new(max, sizeof(WebSession), idle_ms, max_age_ms);
}

SessionTable *session_table_free(SessionTable *t) {
        return slot_table_free(t);
}

void session_close(SessionTable *t, WebSession *s) {
        slot_close(t, (SlotHead *) s);
}

int session_open(SessionTable *t, const char *seat, const char *token, int64_t now_ms,
                 char ret_id[WEB_SESSION_ID_LEN + 1]) {
        if (!web_seat_id_valid(seat) || !web_token_valid(token))
                return -EINVAL;
        WebSession *s = (WebSession *) slot_open(t, now_ms);
        if (!s)
                return -ENOSPC;
        snprintf(s->seat, sizeof(s->seat), "%s", seat);
        snprintf(s->token, sizeof(s->token), "%s", token);
        memcpy(ret_id, s->id, WEB_SESSION_ID_LEN + 1);
        return 0;
}

WebSession *session_find(SessionTable *t, const char *id, int64_t now_ms) {
        return (WebSession *) slot_find(t, id, now_ms);
}

size_t session_count(const SessionTable *t) {
        return slot_count(t);
}
