/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "dnsguard-run.h"
#include "common/fileio.h"
#include "common/log.h"
#include "common/list.h"
#include "network/netdef.h"
#include "seat-log.h"
#include "seatnet-internal.h"

/* ---- the DNS guards' supervision ---- */

/* A restarted guard's ready pipe in the epoll set: its guard_key with this bit. */
#define GUARD_READY_BIT (UINT64_C(1) << 62)

static const char *const guard_state_names[] = {
        [SEATNET_GUARD_NONE] = "none",         [SEATNET_GUARD_RUNNING] = "running",
        [SEATNET_GUARD_RESTARTING] = "restarting", [SEATNET_GUARD_FAILED] = "failed",
        [SEATNET_GUARD_STARTING] = "starting",
};

const char *seatnet_guard_state_to_string(SeatNetGuardState st) {
        return (size_t) st < ELEMENTSOF(guard_state_names) ? guard_state_names[st] : "?";
}

void seatnet_set_guard_fn(SeatNetManager *nm, SeatNetGuardFn fn, void *userdata) {
        nm->guard_fn = fn;
        nm->guard_userdata = userdata;
}

int seatnet_guard_fd(SeatNetManager *nm) {
        return nm ? nm->guard_epfd : -1;
}

/* Under guard_lock: n's guard (n->guard, just started) on the list and its pidfd in the set. */
static int guard_watch(SeatNetManager *nm, SeatNet *n) {
        if (!n->guard_key) {
                n->guard_key = ++nm->guard_keys;
                LIST_PREPEND(guard_next, guard_prev, nm->guards, n);
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = n->guard_key };
        if (epoll_ctl(nm->guard_epfd, EPOLL_CTL_ADD, n->guard.pidfd, &ev) < 0)
                return -errno;
        n->guard_state = SEATNET_GUARD_RUNNING;
        n->guard_up_ms = now_monotonic_ms();
        return 0;
}

/* Under guard_lock: off the list and out of the watch; the process handed back, to be
 * stopped after the unlock (seatnet-internal.h). */
DnsGuardProc seatnet_guard_unwatch(SeatNetManager *nm, SeatNet *n) {
        if (n->guard.pidfd >= 0)
                (void) epoll_ctl(nm->guard_epfd, EPOLL_CTL_DEL, n->guard.pidfd, NULL);
        if (n->guard.ready >= 0)
                (void) epoll_ctl(nm->guard_epfd, EPOLL_CTL_DEL, n->guard.ready, NULL);
        DnsGuardProc g = n->guard;
        n->guard = DNSGUARD_PROC_NONE;
        if (n->guard_key) {
                LIST_REMOVE(guard_next, guard_prev, nm->guards, n);
                n->guard_prev = n->guard_next = NULL;
                n->guard_key = 0;
        }
        n->guard_state = SEATNET_GUARD_NONE;
        return g;
}

static void guard_note_attempt(SeatNet *n, int64_t now) {
        if (n->n_guard_attempts == ELEMENTSOF(n->guard_attempts)) {
                memmove(n->guard_attempts, n->guard_attempts + 1, sizeof(n->guard_attempts) - sizeof(n->guard_attempts[0]));
                n->n_guard_attempts--;
        }
        n->guard_attempts[n->n_guard_attempts++] = now;
}

/* Under guard_lock: it is not running (exited, or a restart failed): when to try again,
 * or, past the cap, failed for good (*ret_failed: the daemon is told). ran_ms: how long it
 * had run (0: it never came up). */
static void guard_schedule(SeatNet *n, int64_t now, int64_t ran_ms, const char *why, bool *ret_failed) {
        char addr[INET_ADDRSTRLEN];
        netdef_guard_address(&n->ns, addr);
        if (ran_ms >= DNSGUARD_STABLE_MS)
                n->guard_in_a_row = 0;
        n->guard_in_a_row++;
        int64_t delay = dnsguard_backoff(n->guard_attempts, n->n_guard_attempts, n->guard_in_a_row, now);
        if (delay < 0) {
                char how[64];
                if (delay == DNSGUARD_GIVE_UP_IN_A_ROW)
                        (void) snprintf(how, sizeof(how), "in a row, none of them up for %d s", DNSGUARD_STABLE_MS / 1000);
                else
                        (void) snprintf(how, sizeof(how), "within %d s", DNSGUARD_RESTART_WINDOW_MS / 1000);
                n->guard_state = SEATNET_GUARD_FAILED;
                (void) snprintf(n->guard_error, sizeof(n->guard_error),
                                "its DNS guard (seat-dnsguard on %s:53) %s after %d restarts %s: not restarted again", addr,
                                why, DNSGUARD_RESTART_CAP, how);
                log_seat_error(n->seat_id, "seat '%s': %s", n->seat_id, n->guard_error);
                *ret_failed = true;
                return;
        }
        n->guard_state = SEATNET_GUARD_RESTARTING;
        n->guard_next_ms = now + delay;
        log_seat_warning(n->seat_id, "seat '%s': its DNS guard (seat-dnsguard on %s:53) %s: restarting it in %" PRId64 " ms",
                         n->seat_id, addr, why, delay);
}

/* Under guard_lock: a guard that did not start is ended at once (SIGKILL: on the event loop
 * no stop may wait out a grace time), and its restart is scheduled. */
static void guard_start_failed(SeatNet *n, int64_t now, const char *why, bool *ret_failed) {
        dnsguard_run_kill(&n->guard);
        (void) snprintf(n->guard_last_exit, sizeof(n->guard_last_exit), "did not start: %s", why);
        guard_schedule(n, now, 0, n->guard_last_exit, ret_failed);
}

/* Under guard_lock: a new guard on the same address. It is spawned here and its ready pipe
 * joins the epoll set (guard_started()): the event loop never waits for a guard to come up
 * (DNSGUARD_READY_TIMEOUT_MS each time, for one that hangs). */
static void guard_restart(SeatNetManager *nm, SeatNet *n, int64_t now, bool *ret_failed) {
        _cleanup_error_ SeatError *err = NULL;
        guard_note_attempt(n, now);
        n->guard_restarts++;
        int r = dnsguard_run_spawn(&n->ns, n->seat_id, &n->guard, &err);
        if (r >= 0) {
                struct epoll_event ev = { .events = EPOLLIN, .data.u64 = n->guard_key | GUARD_READY_BIT };
                if (epoll_ctl(nm->guard_epfd, EPOLL_CTL_ADD, n->guard.ready, &ev) == 0) {
                        n->guard_state = SEATNET_GUARD_STARTING;
                        n->guard_next_ms = now + DNSGUARD_READY_TIMEOUT_MS;
                        return;
                }
                r = -errno;
                (void) seat_error_set(&err, -r, "watch its ready pipe (epoll): %s", strerror(-r));
        }
        guard_start_failed(n, now, err ? err->message : strerror(-r), ret_failed);
}

/* Under guard_lock: a restarted guard's ready pipe is readable, or (timed_out) its time to
 * be ready ran out. */
static void guard_started(SeatNetManager *nm, SeatNet *n, int64_t now, bool timed_out, bool *ret_failed) {
        int ready_fd = n->guard.ready;
        int r = timed_out ? -ETIMEDOUT : dnsguard_run_ready(&n->guard);
        if (r == -EAGAIN)
                return;
        if (ready_fd >= 0)
                (void) epoll_ctl(nm->guard_epfd, EPOLL_CTL_DEL, ready_fd, NULL); /* before a close */
        if (r == 0 && (r = guard_watch(nm, n)) == 0) {
                log_seat_notice(n->seat_id, "seat '%s': DNS guard restarted (pid %d, restart %u)", n->seat_id,
                                (int) n->guard.pid, n->guard_restarts);
                return;
        }
        char why[96];
        if (r == -ETIMEDOUT)
                (void) snprintf(why, sizeof(why), "not ready within %d ms: killed", DNSGUARD_READY_TIMEOUT_MS);
        else if (r == -EIO)
                (void) snprintf(why, sizeof(why), "it exited before it was ready (see seatd's log)");
        else
                (void) snprintf(why, sizeof(why), "watch its pidfd (epoll): %s", strerror(-r));
        guard_start_failed(n, now, why, ret_failed);
}

static void guard_arm_timer(SeatNetManager *nm, int64_t now) {
        int64_t next = INT64_MAX;
        for (SeatNet *n = nm->guards; n; n = n->guard_next)
                if (n->guard_state == SEATNET_GUARD_RESTARTING || n->guard_state == SEATNET_GUARD_STARTING)
                        next = MIN(next, n->guard_next_ms);
        struct itimerspec its = {};
        if (next != INT64_MAX) {
                int64_t d = MAX(next - now, (int64_t) 1);
                its.it_value = (struct timespec) { .tv_sec = d / 1000, .tv_nsec = (d % 1000) * 1000000L };
        }
        (void) timerfd_settime(nm->guard_timer, 0, &its, NULL);
}

typedef struct GuardReport {
        char seat[NETDEF_SEAT_ID_MAX + 1];
        char why[512];
} GuardReport;

/* n failed for good: the daemon is told once guard_lock is let go (at most one per seat
 * and call: a failed guard is not acted on again in the same call). */
static void guard_report(GuardReport *reports, size_t *n_reports, size_t cap, const SeatNet *n) {
        if (!reports || *n_reports >= cap)
                return;
        (void) snprintf(reports[*n_reports].seat, sizeof(reports[*n_reports].seat), "%s", n->seat_id);
        (void) snprintf(reports[*n_reports].why, sizeof(reports[*n_reports].why), "%s", n->guard_error);
        (*n_reports)++;
}

void seatnet_guard_process(SeatNetManager *nm) {
        struct epoll_event evs[16];
        GuardReport *reports = NULL;
        size_t n_reports = 0;
        if (!nm || nm->guard_epfd < 0)
                return;
        int k = epoll_wait(nm->guard_epfd, evs, (int) ELEMENTSOF(evs), 0);
        pthread_mutex_lock(&nm->guard_lock);
        int64_t now = now_monotonic_ms();
        size_t listed = 0;
        for (SeatNet *n = nm->guards; n; n = n->guard_next)
                listed++;
        reports = calloc(listed + 1, sizeof(*reports));
        for (int i = 0; i < k; i++) {
                if (evs[i].data.u64 == GUARD_TIMER_KEY) {
                        uint64_t ticks;
                        (void) !read(nm->guard_timer, &ticks, sizeof(ticks));
                        continue;
                }
                uint64_t key = evs[i].data.u64 & ~GUARD_READY_BIT;
                SeatNet *n = nm->guards;
                while (n && n->guard_key != key)
                        n = n->guard_next;
                if (n && (evs[i].data.u64 & GUARD_READY_BIT)) {
                        bool failed = false;
                        if (n->guard_state == SEATNET_GUARD_STARTING)
                                guard_started(nm, n, now, false, &failed);
                        if (failed)
                                guard_report(reports, &n_reports, listed, n);
                        continue;
                }
                /* Stopped meanwhile (released, reset, seatd stopping): nothing to do. */
                if (!n || n->guard_state != SEATNET_GUARD_RUNNING || n->guard.pidfd < 0)
                        continue;
                pid_t pid = n->guard.pid;
                (void) epoll_ctl(nm->guard_epfd, EPOLL_CTL_DEL, n->guard.pidfd, NULL);
                if (dnsguard_run_reap(&n->guard, n->guard_last_exit, sizeof(n->guard_last_exit)) < 0) {
                        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = n->guard_key };
                        (void) epoll_ctl(nm->guard_epfd, EPOLL_CTL_ADD, n->guard.pidfd, &ev);
                        continue;
                }
                char why[160];
                (void) snprintf(why, sizeof(why), "(pid %d) %s", (int) pid, n->guard_last_exit);
                bool failed = false;
                guard_schedule(n, now, now - n->guard_up_ms, why, &failed);
                if (failed)
                        guard_report(reports, &n_reports, listed, n);
        }
        for (SeatNet *n = nm->guards; n; n = n->guard_next) {
                if ((n->guard_state != SEATNET_GUARD_RESTARTING && n->guard_state != SEATNET_GUARD_STARTING) ||
                    n->guard_next_ms > now)
                        continue;
                bool failed = false;
                if (n->guard_state == SEATNET_GUARD_STARTING)
                        guard_started(nm, n, now, true, &failed);
                else
                        guard_restart(nm, n, now, &failed);
                if (failed)
                        guard_report(reports, &n_reports, listed, n);
        }
        guard_arm_timer(nm, now_monotonic_ms());
        pthread_mutex_unlock(&nm->guard_lock);
        /* Outside the lock: the daemon pauses the seat (and may call back into us). */
        for (size_t i = 0; i < n_reports; i++)
                if (nm->guard_fn)
                        nm->guard_fn(reports[i].seat, reports[i].why, nm->guard_userdata);
        free(reports);
}

/* The guard as seatnet_up() starts it, or seatnet_reinstall() (only_failed: when it
 * failed for good): supervised from here on, with a fresh budget of restarts. Started
 * outside guard_lock (it may take up to DNSGUARD_READY_TIMEOUT_MS; the loop and status
 * need that lock): a new seat's network is not listed yet, and a failed guard is nothing
 * the loop acts on; whoever calls this holds the seat, so nobody frees n meanwhile. */
int seatnet_guard_start(SeatNetManager *nm, SeatNet *n, bool only_failed, SeatError **ret_error) {
        DnsGuardProc g = DNSGUARD_PROC_NONE;
        pthread_mutex_lock(&nm->guard_lock);
        /* (a reset and the repair after a rule change may both come for a failed one) */
        bool go = !only_failed || (n->guard_state == SEATNET_GUARD_FAILED && !n->guard_starting);
        n->guard_starting = go;
        pthread_mutex_unlock(&nm->guard_lock);
        if (!go)
                return 0;
        int r = dnsguard_run_start(&n->ns, n->seat_id, &g, ret_error);
        pthread_mutex_lock(&nm->guard_lock);
        n->guard_starting = false;
        if (r < 0) {
                pthread_mutex_unlock(&nm->guard_lock);
                return r;
        }
        n->guard = g;
        n->n_guard_attempts = 0;
        n->guard_in_a_row = 0;
        n->guard_error[0] = 0;
        DnsGuardProc gone = DNSGUARD_PROC_NONE;
        if ((r = guard_watch(nm, n)) < 0) {
                r = seat_error_set(ret_error, -r, "watch its DNS guard (epoll): %s", strerror(-r));
                if (only_failed) { /* still failed (guard_watch() changed nothing else) */
                        gone = n->guard;
                        n->guard = DNSGUARD_PROC_NONE;
                } else
                        gone = seatnet_guard_unwatch(nm, n);
        } else if (only_failed)
                log_seat_notice(n->seat_id, "seat '%s': DNS guard started again (pid %d)", n->seat_id, (int) g.pid);
        pthread_mutex_unlock(&nm->guard_lock);
        dnsguard_run_stop(&gone); /* (nothing when none) */
        return r;
}
