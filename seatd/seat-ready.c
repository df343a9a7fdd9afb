/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-ready.c: a seat is READY only once its image says so. An agent that lists the
 * capability "ready-check" runs in an image with a readiness check (seat-image's
 * ready_check, kept at AGENT_READY_CHECK_PATH); seatd runs it through the agent until it
 * exits 0, and faults the boot after ready_timeout seconds with the check's last output.
 * Agents without the capability (the busybox image, older agents) are ready at hello. */
#include "seat-internal.h"

#define READY_CHECK_EXEC_MS 10000   /* one run of the check */
#define READY_CHECK_OUTPUT_MAX 2048 /* of one run, kept for the error */
#define READY_CHECK_PAUSE_MS 1000   /* between runs */

/* The calling thread's job (a provision or reset of the control socket), told how the
 * wait goes; none in pools and adoption. Thread-local: a boot runs on its job's thread. */
static __thread SeatBootProgress boot_progress;

void seat_boot_progress_set(const SeatBootProgress *p) {
        boot_progress = p ? *p : (SeatBootProgress) {};
}

void set_progress(Seat *s, const char *what) {
        pthread_mutex_lock(&s->warm_lock);
        free(s->progress);
        s->progress = what ? strdup(what) : NULL;
        pthread_mutex_unlock(&s->warm_lock);
        if (what && boot_progress.report)
                boot_progress.report(boot_progress.userdata, what);
}

typedef struct ReadyOutput {
        char buf[READY_CHECK_OUTPUT_MAX];
        size_t len;
} ReadyOutput;

static int ready_output(bool is_stderr, const uint8_t *data, size_t len, void *userdata) {
        ReadyOutput *o = userdata;
        size_t n = MIN(len, sizeof(o->buf) - o->len);
        (void) is_stderr; /* one stream, in the order it came: what a person reads */
        memcpy(o->buf + o->len, data, n);
        o->len += n;
        return 0;
}

static void sleep_ms(int64_t ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* The loop: run the check through agent until it passes, reporting each wait through
 * p->report (NULL when the wait ends, either way) and stopping when p->cancelled says so.
 * who names the machine in messages ("seat 'ID'"). */
int ready_check_wait(SeatManager *m, AgentClient *agent, const char *id, const char *who, const SeatBootProgress *p,
                     SeatError **ret_error) {
        if (!agent_client_has_capability(agent, AGENT_CAP_READY_CHECK))
                return 0;
        const long limit_s = m->config->ready_timeout;
        const int64_t t0 = now_monotonic_ms(), deadline = t0 + (int64_t) limit_s * 1000;
        _cleanup_free_ char *last = NULL;
        int64_t last_code = 0;
        unsigned tries = 0;

        for (;;) {
                char *argv[] = { (char *) "/bin/sh", (char *) AGENT_READY_CHECK_PATH, NULL };
                AgentMsg req = { .type = AGENT_MSG_EXEC,
                                 .exec = { .argv = argv, .stdin_eof = true, .timeout_ms = READY_CHECK_EXEC_MS,
                                           .max_output = READY_CHECK_OUTPUT_MAX } };
                _cleanup_error_ SeatError *err = NULL;
                AgentExecResult res = {};
                ReadyOutput out = {};
                char what[160];

                tries++;
                int r = agent_client_exec(agent, &req, ready_output, &out, READY_CHECK_EXEC_MS + 5000, &res, &err);
                if (r < 0) {
                        agent_exec_result_done(&res);
                        p->report(p->userdata, NULL);
                        return seat_error_set(ret_error, -r, "%s: the image's readiness check could not run: %s", who,
                                              err ? err->message : strerror(-r));
                }
                bool passed = !res.error && !res.timed_out && res.signal == 0 && res.code == 0;
                last_code = res.code;
                free(last);
                last = res.error ? strdup(res.error) : log_escape(out.buf, out.len, 1024);
                agent_exec_result_done(&res);
                int64_t now = now_monotonic_ms();
                if (passed) {
                        p->report(p->userdata, NULL);
                        log_seat_info(id, "%s: the image's readiness check passed after %u tries (%" PRId64 " ms)", who,
                                      tries, now - t0);
                        return 0;
                }
                if (now + READY_CHECK_PAUSE_MS >= deadline) {
                        p->report(p->userdata, NULL);
                        return seat_error_set(ret_error, ETIMEDOUT,
                                              "%s: the image's readiness check (%s) did not pass within %ld s "
                                              "(ready_timeout in seatd.conf): %u tries, the last exited %" PRId64
                                              " with output '%s'",
                                              who, AGENT_READY_CHECK_PATH, limit_s, tries, last_code, last ? last : "?");
                }
                if (p->cancelled && p->cancelled(p->userdata)) {
                        p->report(p->userdata, NULL);
                        return seat_error_set(ret_error, ECANCELED,
                                              "%s: cancelled while waiting for the image's readiness check", who);
                }
                (void) snprintf(what, sizeof(what),
                                "waiting for the image's readiness check: %" PRId64 " of %ld s, %u tries, last exit %" PRId64,
                                (now - t0) / 1000, limit_s, tries, last_code);
                p->report(p->userdata, what);
                sleep_ms(READY_CHECK_PAUSE_MS);
        }
}

static void seat_ready_report(void *userdata, const char *what) {
        set_progress(userdata, what);
}

/* The thread's job's cancel (boot_progress is this thread's). */
static bool seat_ready_cancelled(void *userdata) {
        (void) userdata;
        return boot_progress.cancelled && boot_progress.cancelled(boot_progress.userdata);
}

/* The seat's own machine, through s->agent: status and the thread's job are told how the
 * wait goes, and the job may cancel it. */
int seat_wait_ready(SeatManager *m, Seat *s, SeatError **ret_error) {
        const SeatBootProgress p = { .report = seat_ready_report, .cancelled = seat_ready_cancelled, .userdata = s };
        char who[96];
        (void) snprintf(who, sizeof(who), "seat '%s'", s->rec.id);
        return ready_check_wait(m, s->agent, s->rec.id, who, &p, ret_error);
}
