/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fac-handout-make.c: making a handout's seats, several at once, off the event loop. */
#include <errno.h>
#include <pthread.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "fac-handout-make.h"
#include "fac-handout.h"
#include "links.h"
#include "seatd-link.h"

/* Thirty participants are thirty provisions. From a warm pool each is a claim of a few
 * milliseconds; without one each is a cold boot (seconds under KVM, tens of seconds under
 * TCG), which seatd runs side by side for separate calls. So up to handout_parallel calls
 * are made at once, each on its own connection to the facilitator socket. seatd still
 * stops the facilitator socket at pool_max_seats, counting seats that are still booting,
 * so more threads here never fill the host further. The entries keep the order of the
 * names, whatever order the seats come in. */
typedef struct HandoutRun {
        const HandoutRequest *req;
        HandoutEntry *e;
        size_t n;
        pthread_mutex_t lock;
        size_t next; /* the next entry to make; under lock */
        size_t done; /* entries finished; under lock */
} HandoutRun;

static void make_one(HandoutRun *run, HandoutEntry *e) {
        const HandoutRequest *req = run->req;
        const WebConfig *conf = req->conf;
        _cleanup_json_ json_object *params = json_object_new_object(), *res = NULL;
        char code[32] = "", id[WEB_SESSION_ID_LEN + 1];

        const SeatdCancel *stop = req->stop.cancelled ? &req->stop : NULL;
        if (stop && stop->cancelled(stop->userdata)) {
                snprintf(e->problem, sizeof(e->problem), "seat-web stopped before this seat was made");
                return;
        }
        if (!params) {
                snprintf(e->problem, sizeof(e->problem), "out of memory");
                return;
        }
        json_object_object_add(params, "image", json_object_new_string(req->image));
        json_object_object_add(params, "participant", json_object_new_string(e->participant));
        json_object_object_add(params, "count", json_object_new_int(1));
        json_object_object_add(params, "facilitator", json_object_new_string(req->facilitator));
        int r = seatd_call_cancellable(conf->facilitator_socket, FAC_LONG_CALL_MS, stop, "seat.provision", params, &res,
                                       code, e->problem, sizeof(e->problem));
        if (r < 0) {
                if (r == -ECANCELED)
                        snprintf(e->problem, sizeof(e->problem), "seat-web stopped while this seat was made: seatd releases it");
                else if (r != -EREMOTEIO)
                        snprintf(e->problem, sizeof(e->problem), "seatd did not answer: %s", strerror(-r));
                return;
        }
        /* Typed and capped, as any answer: web_link_issue() then checks both shapes. */
        json_object *seats = NULL, *seat = NULL;
        const char *sid = NULL, *token = NULL;
        if (json_get_array(res, "seats", true, 1, &seats) < 0 || !(seat = json_object_array_get_idx(seats, 0)) ||
            json_get_string(seat, "id", true, WEB_SEAT_ID_MAX, &sid) < 0 ||
            json_get_string(seat, "token", true, WEB_TOKEN_HEX, &token) < 0) {
                snprintf(e->problem, sizeof(e->problem), "seatd's answer names no seat and token");
                return;
        }
        WebLink l = { .expires = now_realtime_ms() / 1000 + FAC_LINK_EXPIRES_S };
        snprintf(l.seat, sizeof(l.seat), "%s", sid);
        snprintf(l.token, sizeof(l.token), "%s", token);
        snprintf(e->seat, sizeof(e->seat), "%s", l.seat);
        _cleanup_error_ SeatError *err = NULL;
        r = web_link_issue(conf, &l, id, &err);
        sodium_memzero(&l, sizeof(l));
        if (r < 0) {
                snprintf(e->problem, sizeof(e->problem), "seat %s made, but no link: %s", e->seat,
                         err ? err->message : strerror(-r));
                return;
        }
        snprintf(e->url, sizeof(e->url), "%.500s/l/%s", req->base_url, id);
        log_info("handout: seat '%s' for participant '%s' by facilitator '%s'", e->seat, e->participant, req->facilitator);
}

/* Each thread takes the next name until none is left; the page's count moves as seats
 * are finished, in whatever order. */
static void *make_thread(void *p) {
        HandoutRun *run = p;
        for (;;) {
                pthread_mutex_lock(&run->lock);
                size_t i = run->next < run->n ? run->next++ : SIZE_MAX;
                pthread_mutex_unlock(&run->lock);
                if (i == SIZE_MAX)
                        return NULL;
                make_one(run, &run->e[i]);
                /* Told under the lock, so the page's count never goes back (the handouts'
                 * lock is a leaf: it never waits for this one). */
                pthread_mutex_lock(&run->lock);
                fac_handouts_progress(run->req->handouts, run->req->id, ++run->done);
                pthread_mutex_unlock(&run->lock);
        }
}

void fac_handout_make(const HandoutRequest *req) {
        size_t n = json_object_array_length(req->names);
        HandoutRun run = { .req = req, .n = n, .e = calloc(n ? n : 1, sizeof(HandoutEntry)) };
        if (!run.e) {
                fac_handouts_finish(req->handouts, req->id, NULL, 0, now_monotonic_ms());
                return;
        }
        /* The names are copied before any thread starts: the threads read no json-c object
         * that another one reads too. */
        for (size_t i = 0; i < n; i++)
                snprintf(run.e[i].participant, sizeof(run.e[i].participant), "%s",
                         json_object_get_string(json_object_array_get_idx(req->names, i)));
        pthread_mutex_init(&run.lock, NULL);

        size_t want = (size_t) req->conf->handout_parallel, started = 0;
        if (want > n)
                want = n;
        pthread_t threads[WEB_HANDOUT_PARALLEL_MAX];
        /* This worker is one of them; one that cannot be started only makes it slower. */
        while (started + 1 < want && started < ELEMENTSOF(threads) &&
               pthread_create(&threads[started], NULL, make_thread, &run) == 0)
                started++;
        (void) make_thread(&run);
        for (size_t i = 0; i < started; i++)
                pthread_join(threads[i], NULL);
        pthread_mutex_destroy(&run.lock);

        char *page = NULL;
        size_t len = 0;
        if (fac_handout_render(run.e, n, &page, &len) < 0)
                page = NULL;
        sodium_memzero(run.e, (n ? n : 1) * sizeof(HandoutEntry));
        free(run.e);
        fac_handouts_finish(req->handouts, req->id, page, len, now_monotonic_ms());
}
