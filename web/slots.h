/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A fixed table of login sessions, shared by the participants' (session.c) and the
 * facilitators' (fac-session.c): an opaque random id (the cookie's value), idle and
 * absolute expiry, the longest idle one dropped when the table is full, ids compared in
 * constant time, every slot wiped when it ends. Each kind's struct begins with SLOT_HEAD
 * and adds what it keeps; the table knows only the head and the element's size.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"
#include "http-parse.h"

#define SLOT_HEAD                                \
        bool used;                               \
        char id[WEB_SESSION_ID_LEN + 1];         \
        int64_t created_ms, last_ms

typedef struct SlotHead {
        SLOT_HEAD;
} SlotHead;

typedef struct SlotTable SlotTable;

SlotTable *slot_table_new(size_t max, size_t elem_size, int64_t idle_ms, int64_t max_age_ms);
SlotTable *slot_table_free(SlotTable *t);
/* A wiped slot with a new random id, in use from now_ms; when the table is full the
 * longest idle session is dropped for it. NULL only when max is 0. */
SlotHead *slot_open(SlotTable *t, int64_t now_ms);
/* The live slot of that id (not expired; its last use moved to now), or NULL. Every slot
 * is compared, in constant time each: the time taken says nothing about which ids exist. */
SlotHead *slot_find(SlotTable *t, const char *id, int64_t now_ms);
void slot_close(SlotTable *t, SlotHead *s);
size_t slot_count(const SlotTable *t);
/* 32 random bytes, base64url without padding (a session id, a CSRF token, a link's id, an
 * MCP session's id). */
void slot_random_id(char out[WEB_SESSION_ID_LEN + 1]);

/* A kind's typed face of the table, for Table (a SlotTable) of Type (a struct beginning with
 * SLOT_HEAD): table_new(max, idle_ms, max_age_ms) makes one of elements of Type;
 * table_free() and its _cleanup_ function; find(t, id, now_ms) is slot_find()'s live
 * session of that id, or NULL; close_slot(t, s) wipes the slot for another. */
#define DEFINE_SLOT_KIND(Table, Type, table_new, table_free, find, close_slot)                 \
        static inline Table *table_new(size_t max, int64_t idle_ms, int64_t max_age_ms) {       \
                return slot_table_new(max, sizeof(Type), idle_ms, max_age_ms);                 \
        }                                                                                       \
        static inline Table *table_free(Table *t) {                                             \
                return slot_table_free(t);                                                      \
        }                                                                                       \
        DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free)                                        \
        static inline Type *find(Table *t, const char *id, int64_t now_ms) {                    \
                return (Type *) slot_find(t, id, now_ms);                                       \
        }                                                                                       \
        static inline void close_slot(Table *t, Type *s) {                                      \
                slot_close(t, (SlotHead *) s);                                                  \
        }
