/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Tamper detection for table inet seatd: a netlink listener on NFNLGRP_NFTABLES (every
 * committed nftables change in this network namespace is announced there) plus a full
 * read-back. When a change touches a table named "seatd" (or the listener overflowed and
 * events were lost), every watched seat is verified against what was meant; each seat whose
 * rules changed or vanished is reported through the callback. The daemon pauses such a
 * seat. nft_monitor_check() is the same verification, for a periodic timer.
 *
 * The monitor is single-threaded: put nft_monitor_fd() in the event loop and call
 * nft_monitor_process() when it is readable.
 */

#include "common/error.h"
#include "common/macro.h"
#include "nft.h"

#define NFT_MONITOR_MAX_SEATS 256

typedef void (*NftMonitorCallback)(const NftSeatSpec *spec, NftSeatState state, void *userdata);

typedef struct NftMonitor NftMonitor;

int nft_monitor_new(NftMonitorCallback cb, void *userdata, NftMonitor **ret, SeatError **ret_error);
NftMonitor *nft_monitor_free(NftMonitor *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(NftMonitor *, nft_monitor_free)
#define _cleanup_nft_monitor_ _cleanup_(nft_monitor_freep)

/* Watch a seat. The spec is copied, but its strings and profile are borrowed: they must
 * outlive the watch. Replaces an existing watch on the same bridge. */
int nft_monitor_add(NftMonitor *m, const NftSeatSpec *spec);
/* Stop watching a bridge (before removing its rules on release). -ENOENT if unknown. */
int nft_monitor_remove(NftMonitor *m, const char *bridge);

/* Non-blocking netlink socket, for poll(). */
int nft_monitor_fd(const NftMonitor *m);
/* Drain the socket; if anything touched table seatd, verify every seat. Returns the number
 * of seats reported (>= 0) or -errno. */
int nft_monitor_process(NftMonitor *m, SeatError **ret_error);
/* Verify every seat now (periodic check). Returns the number of seats reported. */
int nft_monitor_check(NftMonitor *m, SeatError **ret_error);
