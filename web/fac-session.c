/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Facilitator sessions: the shared slot table (slots.c) holding a name and a CSRF token. */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "fac-session.h"

int fac_session_open(FacSessions *t, const char *name, int64_t now_ms, char ret_id[WEB_SESSION_ID_LEN + 1]) {
        if (!fac_name_valid(name))
                return -EINVAL;
        FacSession *s = (FacSession *) slot_open(t, now_ms);
        if (!s)
                return -ENOSPC;
        slot_random_id(s->csrf);
        snprintf(s->name, sizeof(s->name), "%s", name);
        memcpy(ret_id, s->id, WEB_SESSION_ID_LEN + 1);
        return 0;
}

bool fac_session_csrf_ok(const FacSession *s, const char *token) {
        return s && s->used && web_session_id_valid(token) && sodium_memcmp(s->csrf, token, FAC_CSRF_LEN) == 0;
}
