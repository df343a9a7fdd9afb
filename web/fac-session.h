/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Facilitator sessions: a table apart from the participants' (session.c), under a cookie
 * of its own name, so neither kind of cookie opens anything of the other. Each holds the
 * name the facilitator logged in as and its CSRF token (synchronizer: the dashboard reads
 * it from /facilitator/api/session and sends it back as X-CSRF-Token on every POST). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"
#include "fac-parse.h"
#include "facilitators.h"
#include "http-parse.h"
#include "slots.h"

typedef struct FacSession {
        SLOT_HEAD; /* first: the slot table's (slots.h) */
        char csrf[FAC_CSRF_LEN + 1];
        char name[FAC_NAME_MAX + 1];
} FacSession;

typedef SlotTable FacSessions;

DEFINE_SLOT_KIND(FacSessions, FacSession, fac_sessions_new, fac_sessions_free, fac_session_find, fac_session_close)

/* A new session for name (the oldest idle one dropped when full); its id in ret_id. */
int fac_session_open(FacSessions *t, const char *name, int64_t now_ms, char ret_id[WEB_SESSION_ID_LEN + 1]);
/* Whether token is s's CSRF token (constant time). */
bool fac_session_csrf_ok(const FacSession *s, const char *token);
