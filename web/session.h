/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Participant sessions: an opaque random id (the cookie) → the seat and the token it was
 * opened with. The token is kept because every request is asked of seatd again with it:
 * seat-web decides nothing about a seat itself, and a reset (a new token) or a release
 * ends the session the first time seatd refuses it. A table of fixed size; ids compared
 * in constant time; secrets wiped when a session ends. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"
#include "http-parse.h"
#include "slots.h"

typedef struct WebSession {
        SLOT_HEAD; /* first: the slot table's (slots.h) */
        char seat[WEB_SEAT_ID_MAX + 1];
        char token[WEB_TOKEN_HEX + 1];
} WebSession;

typedef SlotTable SessionTable;

SessionTable *session_table_new(size_t max, int64_t idle_ms, int64_t max_age_ms);
SessionTable *session_table_free(SessionTable *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(SessionTable *, session_table_free)

/* A new session for seat and token; its id in ret_id. When the table is full the oldest
 * idle session is dropped first; -ENOSPC if none is (all in use). */
int session_open(SessionTable *t, const char *seat, const char *token, int64_t now_ms,
                 char ret_id[WEB_SESSION_ID_LEN + 1]);
/* The live session of that id (not expired; its last use moved to now), or NULL. */
WebSession *session_find(SessionTable *t, const char *id, int64_t now_ms);
void session_close(SessionTable *t, WebSession *s);
size_t session_count(const SessionTable *t);
