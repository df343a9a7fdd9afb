/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Handouts being made, and made. Thirty seats take minutes to provision (a boot each under
 * TCG), so the facilitator's browser is not kept waiting for them: the form is answered at
 * once with 303 to /facilitator/handout/ID, a worker provisions the seats (up to
 * handout_parallel at once, fac-handout-make.c), and that page says how far it got (it
 * reloads itself) until it is the handout.
 *
 * A handout belongs to the facilitator who asked for it: another's ID finds nothing. One
 * is made at a time (it holds one of the facilitator side's two workers for its minutes;
 * the other keeps serving the dashboards). A made one is kept for keep_ms, for reloads
 * and printing, then wiped: its page holds one-time links. Thread-safe: the worker
 * reports progress while the loop thread serves the page. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/macro.h"
#include "http-parse.h"

#define FAC_HANDOUTS_KEPT 8 /* made handouts kept at once (each until keep_ms is over) */

typedef struct FacHandouts FacHandouts;

FacHandouts *fac_handouts_new(int64_t keep_ms);
FacHandouts *fac_handouts_free(FacHandouts *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(FacHandouts *, fac_handouts_free)

/* A new handout of total seats for owner, its ID in ret_id. -EBUSY: one is being made (by
 * anyone); -ENOSPC: FAC_HANDOUTS_KEPT made ones are still kept. */
int fac_handouts_start(FacHandouts *h, const char *owner, size_t total, int64_t now_ms,
                       char ret_id[WEB_SESSION_ID_LEN + 1]);
/* The worker's progress: done of total seats asked of seatd so far. */
void fac_handouts_progress(FacHandouts *h, const char *id, size_t done);
/* The worker's last word: the page (taken; NULL when it could not be made). From now on
 * the handout is kept for keep_ms. */
void fac_handouts_finish(FacHandouts *h, const char *id, char *page, size_t len, int64_t now_ms);

/* A handout started whose worker never ran (the job queue was full): its slot is freed
 * at once, not kept an hour, and nobody was sent to its page. */
void fac_handouts_drop(FacHandouts *h, const char *id);

typedef struct FacHandoutView {
        size_t done, total;
        bool made;    /* the worker finished */
        char *page;   /* made: a copy of the page (the caller frees it), NULL when it failed */
        size_t len;
} FacHandoutView;

/* What owner may see of the handout id: -ENOENT when there is none of theirs by that ID
 * (never made, another facilitator's, or no longer kept), -ENOMEM. */
int fac_handouts_get(FacHandouts *h, const char *id, const char *owner, int64_t now_ms, FacHandoutView *ret);
