/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Denied flows, summarised (docs/egress.md "Denied flows"). A thread
 * reads the deny log of every seat's chains from nfnetlink_log (network/nflog.h) and counts
 * per (seat, destination, protocol, port): packets, first and last time. Every interval it
 * hands each seat's entries out as egress.denied records, at most DENY_SUMMARY_PER_SEAT per
 * seat and interval, the most packets first, plus one record for what was folded away.
 *
 * Bounded: at most DENY_SUMMARY_ENTRIES entries (a new destination beyond that is folded
 * into its seat's count) and DENY_SUMMARY_SEATS seats with folded counts. The counts are of
 * *logged* packets: the log rule is rate-limited (NFT_LOG_RATE a second, burst
 * NFT_LOG_BURST, per rule), the drop counters behind it count every packet.
 */

#include <json-c/json.h>
#include <stdint.h>

#include "common/error.h"
#include "common/macro.h"

#define DENY_SUMMARY_ENTRIES 1024
#define DENY_SUMMARY_SEATS 256
#define DENY_SUMMARY_PER_SEAT 32

typedef struct DenySummary DenySummary;

/* One record's data for seat (not consumed). Called without any of the summary's locks
 * but its emit lock, which orders it against deny_summary_flush(). */
typedef void (*DenySummaryEmitFn)(const char *seat, json_object *data, void *userdata);

/* Binds nfnetlink_log group `group` and starts the thread; emit(…, userdata) gets the
 * records every interval_s seconds. -errno (and why in ret_error) when the group cannot be
 * bound: no nfnetlink_log in this kernel, or the group is taken. */
int deny_summary_new(uint16_t group, unsigned interval_s, DenySummaryEmitFn emit, void *userdata, DenySummary **ret,
                     SeatError **ret_error);
/* Stops the thread and hands out what is pending (to the emit function given at new). */
DenySummary *deny_summary_free(DenySummary *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(DenySummary *, deny_summary_free)

/* Hands out now what is pending for seat (NULL: every seat) through emit (NULL: the one
 * given at new), e.g. before the seat's session log is closed. NULL d: nothing. */
void deny_summary_flush(DenySummary *d, const char *seat, DenySummaryEmitFn emit, void *userdata);

/* ---- the table, for tests ---- */
typedef struct DenyTable DenyTable;
typedef struct NflogPacket NflogPacket;
DenyTable *deny_table_new(void);
DenyTable *deny_table_free(DenyTable *t);
void deny_table_add(DenyTable *t, const NflogPacket *p, int64_t now_ms);
/* Removes seat's entries (NULL: every seat's) and emits them. */
void deny_table_flush(DenyTable *t, const char *seat, DenySummaryEmitFn emit, void *userdata);
