/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What fac-http.c shares with fac-ws.c: the facilitator side's state and its two checks
 * of a request. Loop thread only. */

#include <pthread.h>
#include <stdbool.h>

#include "fac-events.h"
#include "fac-handouts.h"
#include "fac-session.h"
#include "jobs.h"
#include "ratelimit.h"
#include "web.h"

struct Fac {
        Web *w;
        FacSessions *sessions;
        RateLimit *per_address, *per_name;
        Jobs *jobs;
        /* Password verifies, on a worker and a short queue of their own: logins from
         * anywhere (no session needed) must not fill the dashboard's queue. */
        Jobs *login_jobs;
        FacHandouts *handouts; /* being made (on a worker of jobs) and made */
        Asset assets[4];
        /* One argon2 verify at a time: a flood of logins holds FAC_PWHASH_MEMLIMIT, not
         * that times the workers. */
        pthread_mutex_t verify_lock;
        /* the dashboards' live feed (fac-events.c) */
        FacEvents *events;
        size_t n_dash;
        uint64_t seq_seen;
        struct lws_context *ctx;
};

/* The facilitator session of the request's cookie (only the facilitator's cookie: a
 * participant's opens nothing here), or NULL. */
FacSession *fac_request_session(struct lws *wsi, Web *w);
/* seat-web's own Origin, present: what every state-changing request and the dashboard's
 * WebSocket need. */
bool fac_same_origin(struct lws *wsi, Web *w);
/* The request carries a participant's cookie beside the facilitator's (fac-http.c). */
bool fac_participant_too(struct lws *wsi);
