/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's DNS guard process (network/seat-dnsguard.c, docs/egress.md "The DNS guard"):
 * started for a seat whose profile allows names, before its machine boots, as root only
 * long enough to bind 127.X.Y.Z:53 and then as DNSGUARD_USER. It holds the read end of a
 * pipe whose write end only seatd has: when seatd exits, however it exits, the guard
 * sees the hang-up and exits too; an adopting seatd starts a new one.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "network/netdef.h"

#define DNSGUARD_USER "nobody"
#define DNSGUARD_READY_TIMEOUT_MS 5000
/* How long a stop waits after SIGTERM before SIGKILL. */
#define DNSGUARD_STOP_GRACE_MS 2000

typedef struct DnsGuardProc {
        pid_t pid;     /* 0: none */
        int lifeline;  /* our end of the pipe; -1: none */
        int pidfd;     /* readable once it exited (pidfd_open); -1: none */
        int ready;     /* spawned, not ready yet: its ready pipe (a byte, or EOF); -1: none */
} DnsGuardProc;

#define DNSGUARD_PROC_NONE ((DnsGuardProc) { .pid = 0, .lifeline = -1, .pidfd = -1, .ready = -1 })

/*
 * Supervision (seatd/seatnet-guard.c): a guard that exits is restarted on the same address
 * after a delay that starts at DNSGUARD_BACKOFF_FIRST_MS and doubles with every restart in
 * the last DNSGUARD_RESTART_WINDOW_MS (or every failure in a row), up to
 * DNSGUARD_BACKOFF_MAX_MS. It is not restarted again (the seat is paused) once it was
 * restarted DNSGUARD_RESTART_CAP times in that window, or DNSGUARD_RESTART_CAP times in a
 * row without ever running DNSGUARD_STABLE_MS: the window alone let a guard that dies every
 * few seconds live forever on a slow host, where the growing delays and slow starts spread
 * its restarts past the window.
 */
#define DNSGUARD_BACKOFF_FIRST_MS 200
#define DNSGUARD_BACKOFF_MAX_MS 5000
#define DNSGUARD_RESTART_CAP 10
#define DNSGUARD_RESTART_WINDOW_MS 60000
#define DNSGUARD_STABLE_MS 30000 /* a guard up this long before it exits was not failing */

#define DNSGUARD_GIVE_UP_WINDOW (-1)   /* DNSGUARD_RESTART_CAP restarts within the window */
#define DNSGUARD_GIVE_UP_IN_A_ROW (-2) /* DNSGUARD_RESTART_CAP restarts in a row, none stable */

/* The policy, pure: attempts[] are the times (ms, monotonic) of the restarts so far, at most
 * DNSGUARD_RESTART_CAP of them, the latest last; in_a_row counts the guard's ends (exits,
 * failed starts) in a row, this one included, since it last ran DNSGUARD_STABLE_MS. Returns
 * the delay before the next restart, or DNSGUARD_GIVE_UP_IN_A_ROW or DNSGUARD_GIVE_UP_WINDOW
 * (the first of the two when both hold). */
int64_t dnsguard_backoff(const int64_t *attempts, size_t n_attempts, unsigned in_a_row, int64_t now_ms);
/* "exited with status 1", "killed by signal 9 (Killed)": from a wait status. */
void dnsguard_describe_exit(int status, char *buf, size_t size);
/* It exited (its pidfd is readable): reap it, describe why into buf, and forget it (fds
 * closed, p NONE). Returns 0, or -EAGAIN when it has not exited after all. */
int dnsguard_run_reap(DnsGuardProc *p, char *buf, size_t size);

/* Starts the guard for the seat's network (ns->names set) and waits until it answers. */
int dnsguard_run_start(const NetSeat *ns, const char *seat_id, DnsGuardProc *ret, SeatError **ret_error);
/* The same without the wait (the event loop's restarts): *ret has its ready pipe in
 * ret->ready, for dnsguard_run_ready() once it is readable (or DNSGUARD_READY_TIMEOUT_MS). */
int dnsguard_run_spawn(const NetSeat *ns, const char *seat_id, DnsGuardProc *ret, SeatError **ret_error);
/* Its ready pipe is readable: 0, ready (the pipe closed, ready -1); -EIO: it exited or said
 * something else (p stays as it is, for dnsguard_run_stop()); -EAGAIN: nothing yet. */
int dnsguard_run_ready(DnsGuardProc *p);
/* Stops (SIGTERM, SIGKILL after DNSGUARD_STOP_GRACE_MS) and reaps it; a no-op for
 * DNSGUARD_PROC_NONE. */
void dnsguard_run_stop(DnsGuardProc *p);
/* The same at once (SIGKILL, no grace): one that never came up, on the event loop. */
void dnsguard_run_kill(DnsGuardProc *p);
