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

DEFINE_SLOT_KIND(SessionTable, WebSession, session_table_new, session_table_free, session_find, session_close)

/* A new session for seat and token; its id in ret_id. When the table is full the oldest
 * idle session is dropped first; -ENOSPC if none is (all in use). */
int session_open(SessionTable *t, const char *seat, const char *token, int64_t now_ms,
                 char ret_id[WEB_SESSION_ID_LEN + 1]);
size_t session_count(const SessionTable *t);
