/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A seat's packet capture (profile "capture on", docs/egress.md): a thread that reads the
 * seat's bridge with libpcap and writes what it sees to a CaptureRing (capture-ring.h).
 * The bridge is the seat's alone: every frame the guest sends (dropped by the filter or
 * not) and every reply it gets. Thread-safe: capture_stats() may be called from anywhere
 * while the thread runs.
 */

#include <stdbool.h>
#include <stdint.h>

#include "capture-ring.h"
#include "common/error.h"

typedef struct Capture Capture;

typedef struct CaptureParams {
        const char *ifname;       /* the seat's bridge */
        const char *dir;          /* where the files go (the seat's directory) */
        const char *prefix;       /* "capture-g3-" */
        uint32_t snaplen;
        uint64_t max_bytes;
} CaptureParams;

/* True when seatd was built with libpcap. */
bool capture_supported(void);

/* Open the interface, then start the thread: when this returns 0 the capture runs. */
int capture_start(const CaptureParams *p, Capture **ret, SeatError **ret_error);
/* A snapshot of the counters (kernel_drops as of the last poll). */
void capture_stats(Capture *c, CaptureStats *ret);
/* Stop the thread, write out what the kernel still holds, close the files; the final
 * counters in ret (may be NULL). Frees c; NULL is fine. */
void capture_stop(Capture *c, CaptureStats *ret);
