/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A change counter for what a dashboard shows: every published change of a seat (state,
 * fault, participant, generation) and every seal that ends bumps it. events.subscribe
 * waits on it, so a subscriber hears of a reset at once instead of polling every seat.
 * It carries no data: the waiter reads the state anew, so a slow waiter never queues
 * stale changes, it just sees the latest.
 */

#include <pthread.h>
#include <stdint.h>

typedef struct Changes {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        uint64_t seq;
} Changes;

int changes_init(Changes *c);
void changes_done(Changes *c);
void changes_bump(Changes *c);
/* Returns the counter once it is past seen, or after timeout_ms in any case. */
uint64_t changes_wait(Changes *c, uint64_t seen, int timeout_ms);
