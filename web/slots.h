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
/* 32 random bytes, base64url without padding (a session id, a CSRF token). */
void slot_random_id(char out[WEB_SESSION_ID_LEN + 1]);
