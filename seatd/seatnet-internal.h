/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd's seat networks, private to seatnet*.c: the SeatNetManager and SeatNet structures
 * and the functions those files share. What the rest of seatd may use is in seatnet.h.
 *   seatnet.c        the manager, host forwarding, one seat's network end to end;
 *   seatnet-guard.c  the DNS guards' supervision (seatnet_guard_*()). */
#pragma once

#include <arpa/inet.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "dnsguard-run.h"
#include "network/netdef.h"
#include "network/nftwatch.h"
#include "network/profile.h"
#include "seatnet.h"

typedef struct Pending {
        char seat[NFT_SEAT_NAME_MAX + 1];
        NftSeatState state;
} Pending;

struct SeatNetManager {
        const SeatConfig *config;
        pthread_mutex_t lock;
        NetPool pool;
        unsigned pool_size;
        uint8_t *used;            /* one byte per subnet of the pool */
        NftContext *nft;
        NftMonitor *mon;
        SeatNetTamperFn fn;
        void *userdata;
        Pending pending[NFT_MONITOR_MAX_SEATS];
        size_t n_pending;
        bool lockdown;            /* forwarding only on seat bridges and the uplink */
        uint16_t log_group;       /* the deny log's nfnetlink_log group; 0: the kernel log */
        /* The DNS guards' supervision: an epoll set (for the daemon's loop) of each running
         * guard's pidfd and a timerfd for pending restarts. Everything of a seat's guard
         * (SeatNet.guard*) and the list of supervised seats are under guard_lock, a lock
         * taken after nm->lock or the daemon's, never before them. */
        pthread_mutex_t guard_lock;
        int guard_epfd, guard_timer;
        SeatNet *guards;
        uint64_t guard_keys;
        SeatNetGuardFn guard_fn;
        void *guard_userdata;
};

struct SeatNet {
        NetSeat ns;
        char seat_id[NETDEF_SEAT_ID_MAX + 1];
        char profile_name[SEATNET_PROFILE_NAME_MAX + 1];
        char *profile_text;
        EgressProfile *profile;
        NftSeatSpec spec;
        char guest_cidr[INET_ADDRSTRLEN + 4], gateway[INET_ADDRSTRLEN];
        int index;
        bool rules, routed, watched;
        uint64_t denied_seen;
        /* With "allow name": the seat's DNS guard, supervised (under nm->guard_lock). */
        DnsGuardProc guard;
        SeatNetGuardState guard_state;
        uint64_t guard_key;       /* its pidfd's epoll data; 0: not listed */
        unsigned guard_restarts;  /* since the network came up (this seatd) */
        int64_t guard_attempts[DNSGUARD_RESTART_CAP]; /* restart times, oldest first */
        size_t n_guard_attempts;
        unsigned guard_in_a_row;  /* ends in a row without running DNSGUARD_STABLE_MS (dnsguard-run.h) */
        int64_t guard_up_ms;      /* RUNNING: since when */
        int64_t guard_next_ms;    /* RESTARTING: when it is restarted; STARTING: its deadline to be ready */
        bool guard_starting;      /* FAILED, and seatnet_guard_start() is starting it again */
        char guard_last_exit[128];
        char guard_error[512];
        SeatNet *guard_prev, *guard_next;
};

/* The guards' timerfd in the epoll set (seatnet_manager_new() adds it); every other key
 * is a seat's guard_key. */
#define GUARD_TIMER_KEY UINT64_MAX

/* ---- seatnet-guard.c ---- */

/* The guard as seatnet_up() starts it, or seatnet_reinstall() (only_failed: when it
 * failed for good); -errno. */
int seatnet_guard_start(SeatNetManager *nm, SeatNet *n, bool only_failed, SeatError **ret_error);
/* Under guard_lock: n's guard off the list and out of the watch (a deliberate stop: no
 * restart follows). The process is handed back for dnsguard_run_stop() after the unlock:
 * its grace (up to DNSGUARD_STOP_GRACE_MS) must not hold the lock that status and the
 * other seats' supervision need. */
DnsGuardProc seatnet_guard_unwatch(SeatNetManager *nm, SeatNet *n);
