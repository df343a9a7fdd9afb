/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Making a handout's seats (fac-handout-make.c): one seat.provision (count 1) per name on
 * seatd's facilitator socket, up to handout_parallel at once, a one-time link to each, and
 * the page, into the handouts table. Runs on a worker (minutes under TCG); thread-safe
 * against the loop thread serving the handout's page. */

#include <json-c/json.h>
#include <stddef.h>

#include "conf.h"
#include "fac-handouts.h"
#include "seatd-link.h"

#define FAC_LONG_CALL_MS (600 * 1000) /* a provision, reset or release: a boot under TCG, a seal */
#define FAC_LINK_EXPIRES_S (12 * 3600) /* a handout's one-time links */

typedef struct HandoutRequest {
        const WebConfig *conf;   /* facilitator_socket, state_dir (the links), handout_parallel */
        /* seat-web stops: no more seats are asked for, and the calls running give up, so
         * that seatd releases their seats again (they would run for nobody: the page goes
         * with seat-web). .cancelled NULL: never. */
        SeatdCancel stop;
        FacHandouts *handouts;   /* where progress and the page go, under id */
        const char *id;
        const char *base_url;    /* the links' base: what the facilitator's browser called us */
        const char *image;
        const char *facilitator; /* seatd records it as seat-web's word */
        json_object *names;      /* an array of participant names (checked by fac_names_parse) */
} HandoutRequest;

void fac_handout_make(const HandoutRequest *req);
