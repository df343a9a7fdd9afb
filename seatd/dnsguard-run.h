/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's DNS guard process (network/seat-dnsguard.c, docs/egress.md "The DNS guard"):
 * started for a seat whose profile allows names, before its machine boots, as root only
 * long enough to bind 127.X.Y.Z:53 and then as DNSGUARD_USER. It holds the read end of a
 * pipe whose write end only seatd has: when seatd exits, however it exits, the guard
 * sees the hang-up and exits too; an adopting seatd starts a new one.
 */
#include <sys/types.h>

#include "common/error.h"
#include "network/netdef.h"

#define DNSGUARD_USER "nobody"
#define DNSGUARD_READY_TIMEOUT_MS 5000

typedef struct DnsGuardProc {
        pid_t pid;     /* 0: none */
        int lifeline;  /* our end of the pipe; -1: none */
} DnsGuardProc;

#define DNSGUARD_PROC_NONE ((DnsGuardProc) { .pid = 0, .lifeline = -1 })

/* Starts the guard for the seat's network (ns->names set) and waits until it answers. */
int dnsguard_run_start(const NetSeat *ns, const char *seat_id, DnsGuardProc *ret, SeatError **ret_error);
/* Stops and reaps it; a no-op for DNSGUARD_PROC_NONE. */
void dnsguard_run_stop(DnsGuardProc *p);
