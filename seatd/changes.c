/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <time.h>

#include "changes.h"

int changes_init(Changes *c) {
        pthread_condattr_t a;
        *c = (Changes) {};
        if (pthread_condattr_init(&a) != 0)
                return -ENOMEM;
        /* Timed waits on the monotonic clock: a wall-clock step must not stall a dashboard. */
        int r = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        if (r == 0)
                r = pthread_cond_init(&c->cond, &a);
        pthread_condattr_destroy(&a);
        if (r != 0)
                return -r;
        pthread_mutex_init(&c->lock, NULL);
        return 0;
}

void changes_done(Changes *c) {
        pthread_cond_destroy(&c->cond);
        pthread_mutex_destroy(&c->lock);
}

void changes_bump(Changes *c) {
        pthread_mutex_lock(&c->lock);
        c->seq++;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
}

uint64_t changes_wait(Changes *c, uint64_t seen, int timeout_ms) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&c->lock);
        while (c->seq == seen)
                if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT)
                        break;
        uint64_t seq = c->seq;
        pthread_mutex_unlock(&c->lock);
        return seq;
}
