/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seat-web's worker pools (web/jobs.c) with a per-seat share: a seat whose jobs never end
 * holds at most its share of the workers, its later jobs wait their turn, and another
 * seat's job runs meanwhile. The jobs are the facilitator kind (a work function), so no
 * seatd is needed. Threaded: run under TSan too.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../lib/seat-test.h"

#include "jobs.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool release_slow;
static unsigned slow_running, fast_done;

/* Seat "slow"'s jobs: a server that does not answer, until the test lets them go. */
static void slow_work(Job *job) {
        (void) job;
        pthread_mutex_lock(&lock);
        slow_running++;
        pthread_cond_broadcast(&cond);
        while (!release_slow)
                pthread_cond_wait(&cond, &lock);
        slow_running--;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
}

static void fast_work(Job *job) {
        (void) job;
        pthread_mutex_lock(&lock);
        fast_done++;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
}

/* Wait (at most 10 s) until pred holds; its value then. */
static bool wait_for(bool (*pred)(void)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&lock);
        bool ok;
        while (!(ok = pred()) && pthread_cond_timedwait(&cond, &lock, &until) == 0)
                ;
        ok = ok || pred(); /* as it stood when the wait timed out */
        pthread_mutex_unlock(&lock);
        return ok;
}
static bool two_slow(void) {
        return slow_running == 2;
}
static bool fast_ran(void) {
        return fast_done == 1;
}
static bool all_done(void) {
        return slow_running == 0 && fast_done == 1;
}

static Job *job(const char *seat, void (*work)(Job *)) {
        Job *j = job_new(JOB_FAC, NULL, seat, "");
        assert_non_null(j);
        j->work = work;
        return j;
}

TEST(per_seat_share) {
        (void) state;
        Jobs *j = jobs_new("/nonexistent", 1000, 4, 16, NULL);
        assert_non_null(j);
        jobs_set_per_seat_max(j, 2);
        for (int i = 0; i < 4; i++)
                assert_int_equal(jobs_submit(j, job("slow", slow_work)), 0);
        assert_true(wait_for(two_slow));
        assert_int_equal(jobs_submit(j, job("other", fast_work)), 0);
        /* four workers, two of them idle: the other seat's job runs although two of the slow
         * seat's were queued before it */
        assert_true(wait_for(fast_ran));
        usleep(100 * 1000);
        pthread_mutex_lock(&lock);
        assert_int_equal(slow_running, 2); /* never more than its share */
        release_slow = true;
        pthread_cond_broadcast(&cond);
        pthread_mutex_unlock(&lock);
        assert_true(wait_for(all_done));
        jobs_free(j); /* joins the workers; frees what is done */
}

TEST_MAIN("web-jobs")
