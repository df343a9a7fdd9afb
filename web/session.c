/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Participant sessions: the shared slot table (slots.c) holding a seat and its token. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "session.h"

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

size_t session_count(const SessionTable *t) {
        return slot_count(t);
}
