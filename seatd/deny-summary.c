/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* deny-summary.c: what seats tried to reach, from the deny log, into their audit logs. */
#include "network/nflog.h"

#include "deny-summary.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/jsonframe.h"
#include "common/log.h"

/* How long one receive waits: the thread checks its stop flag and the interval this often. */
#define RECEIVE_TIMEOUT_MS 500

typedef struct DenyEntry {
        char seat[NFT_SEAT_NAME_MAX + 1];
        int family;
        uint8_t daddr[16];
        uint8_t proto;
        uint16_t dport;
        uint64_t count;
        int64_t first_ms, last_ms;
} DenyEntry;

/* What a seat lost to a full table: packets with a destination nobody kept. */
typedef struct DenyFolded {
        char seat[NFT_SEAT_NAME_MAX + 1];
        uint64_t packets;
} DenyFolded;

struct DenyTable {
        DenyEntry entries[DENY_SUMMARY_ENTRIES];
        size_t n;
        DenyFolded folded[DENY_SUMMARY_SEATS];
        size_t n_folded;
        uint64_t lost; /* packets of seats beyond DENY_SUMMARY_SEATS folded ones: counted only */
};

DenyTable *deny_table_new(void) {
        return calloc(1, sizeof(DenyTable));
}

DenyTable *deny_table_free(DenyTable *t) {
        return mfree(t);
}

static bool same_flow(const DenyEntry *e, const NflogPacket *p) {
        return e->family == p->family && e->proto == p->proto && e->dport == p->dport &&
               memcmp(e->daddr, p->daddr, sizeof(e->daddr)) == 0 && strcmp(e->seat, p->seat) == 0;
}

static void fold(DenyTable *t, const char *seat, uint64_t packets) {
        for (size_t i = 0; i < t->n_folded; i++)
                if (strcmp(t->folded[i].seat, seat) == 0) {
                        t->folded[i].packets += packets;
                        return;
                }
        if (t->n_folded == DENY_SUMMARY_SEATS) {
                t->lost += packets;
                return;
        }
        DenyFolded *f = &t->folded[t->n_folded++];
        (void) snprintf(f->seat, sizeof(f->seat), "%s", seat);
        f->packets = packets;
}

void deny_table_add(DenyTable *t, const NflogPacket *p, int64_t now_ms) {
        /* A linear scan: at most DENY_SUMMARY_ENTRIES, and only logged (rate-limited)
         * packets come here. */
        for (size_t i = 0; i < t->n; i++)
                if (same_flow(&t->entries[i], p)) {
                        t->entries[i].count++;
                        t->entries[i].last_ms = now_ms;
                        return;
                }
        if (t->n == DENY_SUMMARY_ENTRIES) {
                fold(t, p->seat, 1);
                return;
        }
        DenyEntry *e = &t->entries[t->n++];
        *e = (DenyEntry) { .family = p->family, .proto = p->proto, .dport = p->dport, .count = 1,
                           .first_ms = now_ms, .last_ms = now_ms };
        memcpy(e->daddr, p->daddr, sizeof(e->daddr));
        (void) snprintf(e->seat, sizeof(e->seat), "%s", p->seat);
}

static const char *proto_name(uint8_t proto, char buf[static 4]) {
        switch (proto) {
        case 0:
                return NULL;
        case IPPROTO_TCP:
                return "tcp";
        case IPPROTO_UDP:
                return "udp";
        case IPPROTO_ICMP:
                return "icmp";
        case IPPROTO_ICMPV6:
                return "ipv6-icmp";
        case IPPROTO_SCTP:
                return "sctp";
        case IPPROTO_UDPLITE:
                return "udplite";
        default:
                (void) snprintf(buf, 4, "%u", proto);
                return buf;
        }
}

static json_object *entry_json(const DenyEntry *e) {
        char addr[INET6_ADDRSTRLEN], pbuf[4];
        json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        const char *proto = proto_name(e->proto, pbuf);
        bool ip = e->family == AF_INET || e->family == AF_INET6;
        json_object_object_add(o, "destination",
                               ip && inet_ntop(e->family, e->daddr, addr, sizeof(addr)) ? json_object_new_string(addr) : NULL);
        json_object_object_add(o, "protocol", proto ? json_object_new_string(proto) : NULL);
        json_object_object_add(o, "port", e->dport ? json_object_new_int(e->dport) : NULL);
        json_object_object_add(o, "count", json_object_new_int64((int64_t) e->count));
        json_object_object_add(o, "first_ms", json_object_new_int64(e->first_ms));
        json_object_object_add(o, "last_ms", json_object_new_int64(e->last_ms));
        return o;
}

static int by_count_desc(const void *a, const void *b) {
        const DenyEntry *x = a, *y = b;
        if (x->count != y->count)
                return x->count < y->count ? 1 : -1;
        return x->first_ms < y->first_ms ? -1 : x->first_ms > y->first_ms;
}

/* One seat's entries (taken out of the table) and what it had folded: at most
 * DENY_SUMMARY_PER_SEAT records, the most packets first, then one for the rest. */
static void emit_seat(const char *seat, DenyEntry *es, size_t n, uint64_t folded, DenySummaryEmitFn emit,
                      void *userdata) {
        qsort(es, n, sizeof(*es), by_count_desc);
        size_t shown = n < DENY_SUMMARY_PER_SEAT ? n : DENY_SUMMARY_PER_SEAT;
        for (size_t i = 0; i < shown; i++) {
                _cleanup_json_ json_object *o = entry_json(&es[i]);
                if (o)
                        emit(seat, o, userdata);
        }
        uint64_t more_packets = folded;
        int64_t first = INT64_MAX, last = 0;
        for (size_t i = shown; i < n; i++) {
                more_packets += es[i].count;
                first = es[i].first_ms < first ? es[i].first_ms : first;
                last = es[i].last_ms > last ? es[i].last_ms : last;
        }
        if (more_packets == 0)
                return;
        _cleanup_json_ json_object *o = json_object_new_object();
        if (!o)
                return;
        /* Destinations not listed: those beyond the per-seat cap, and packets whose
         * destination was never kept (the table was full: how many destinations is unknown). */
        json_object_object_add(o, "folded_destinations", json_object_new_int64((int64_t) (n - shown)));
        json_object_object_add(o, "folded_count", json_object_new_int64((int64_t) more_packets));
        if (folded > 0)
                json_object_object_add(o, "table_full_count", json_object_new_int64((int64_t) folded));
        if (n > shown) {
                json_object_object_add(o, "first_ms", json_object_new_int64(first));
                json_object_object_add(o, "last_ms", json_object_new_int64(last));
        }
        emit(seat, o, userdata);
}

/* Moves seat's entries out of t into out (room for DENY_SUMMARY_ENTRIES); its folded count. */
static size_t take_seat(DenyTable *t, const char *seat, DenyEntry *out, uint64_t *ret_folded) {
        size_t n = 0, keep = 0;
        for (size_t i = 0; i < t->n; i++) {
                if (strcmp(t->entries[i].seat, seat) == 0)
                        out[n++] = t->entries[i];
                else
                        t->entries[keep++] = t->entries[i];
        }
        t->n = keep;
        *ret_folded = 0;
        for (size_t i = 0; i < t->n_folded; i++)
                if (strcmp(t->folded[i].seat, seat) == 0) {
                        *ret_folded = t->folded[i].packets;
                        t->folded[i] = t->folded[--t->n_folded];
                        break;
                }
        return n;
}

/* The next seat with anything pending, or NULL. */
static const char *any_seat(const DenyTable *t) {
        return t->n > 0 ? t->entries[0].seat : t->n_folded > 0 ? t->folded[0].seat : NULL;
}

static void flush_locked_out(DenyTable *t, pthread_mutex_t *lock, const char *seat, DenySummaryEmitFn emit,
                             void *userdata) {
        _cleanup_free_ DenyEntry *buf = malloc(sizeof(DenyEntry) * DENY_SUMMARY_ENTRIES);
        if (!buf)
                return;
        for (;;) {
                char id[NFT_SEAT_NAME_MAX + 1];
                uint64_t folded = 0;
                if (lock)
                        pthread_mutex_lock(lock);
                const char *next = seat ? seat : any_seat(t);
                size_t n = 0;
                if (next) {
                        (void) snprintf(id, sizeof(id), "%s", next);
                        n = take_seat(t, id, buf, &folded);
                }
                if (lock)
                        pthread_mutex_unlock(lock);
                if (!next)
                        return;
                if (n > 0 || folded > 0)
                        emit_seat(id, buf, n, folded, emit, userdata);
                if (seat)
                        return;
        }
}

void deny_table_flush(DenyTable *t, const char *seat, DenySummaryEmitFn emit, void *userdata) {
        flush_locked_out(t, NULL, seat, emit, userdata);
}

/* ---- the thread ---- */

struct DenySummary {
        int fd;
        uint16_t group;
        unsigned interval_s;
        DenySummaryEmitFn emit;
        void *userdata;
        pthread_t thread;
        bool started;
        bool stop;                /* atomic */
        pthread_mutex_t lock;     /* the table */
        pthread_mutex_t emit_lock; /* one hand-out at a time: a seat's flush before its log closes
                                    * waits for a periodic one under way */
        DenyTable *table;
        uint64_t overruns;        /* receives the kernel had to drop messages for */
};

static void on_packet(const NflogPacket *p, void *userdata) {
        DenySummary *d = userdata;
        int64_t now = now_realtime_ms();
        pthread_mutex_lock(&d->lock);
        deny_table_add(d->table, p, now);
        pthread_mutex_unlock(&d->lock);
}

void deny_summary_flush(DenySummary *d, const char *seat, DenySummaryEmitFn emit, void *userdata) {
        if (!d)
                return;
        pthread_mutex_lock(&d->emit_lock);
        flush_locked_out(d->table, &d->lock, seat, emit ? emit : d->emit, emit ? userdata : d->userdata);
        uint64_t lost = 0;
        if (!seat) {
                pthread_mutex_lock(&d->lock);
                lost = d->table->lost;
                d->table->lost = 0;
                pthread_mutex_unlock(&d->lock);
        }
        pthread_mutex_unlock(&d->emit_lock);
        if (lost > 0)
                log_warning("denied-flow summaries: %" PRIu64 " logged packets of more than %d seats with a full table were not attributed",
                            lost, DENY_SUMMARY_SEATS);
}

static void *deny_thread(void *userdata) {
        DenySummary *d = userdata;
        _cleanup_free_ uint8_t *buf = malloc(NFLOG_RECV_BUF_SIZE);
        int64_t next = now_realtime_ms() + (int64_t) d->interval_s * 1000;
        uint64_t bad = 0;

        if (!buf) {
                log_error("denied-flow summaries: out of memory: off");
                return NULL;
        }
        while (!__atomic_load_n(&d->stop, __ATOMIC_ACQUIRE)) {
                int r = nflog_receive(d->fd, buf, NFLOG_RECV_BUF_SIZE, on_packet, d);
                if (r == -ENOBUFS) {
                        /* Logged packets were lost to a full socket buffer: the counts are
                         * lower than what was logged (the drop counters still have them all). */
                        if (d->overruns++ % 100 == 0)
                                log_warning("denied-flow summaries: the kernel dropped log messages (reader too slow, %" PRIu64 " times)",
                                            d->overruns);
                } else if (r == -EBADMSG) {
                        if (bad++ % 100 == 0)
                                log_warning("denied-flow summaries: a malformed nfnetlink_log message was skipped");
                } else if (r < 0 && r != -ETIMEDOUT && r != -EINTR) {
                        log_error_errno(r, "denied-flow summaries: reading nfnetlink_log group %u: %m: off", d->group);
                        break;
                }
                int64_t now = now_realtime_ms();
                if (now >= next) {
                        deny_summary_flush(d, NULL, NULL, NULL);
                        next = now + (int64_t) d->interval_s * 1000;
                }
        }
        return NULL;
}

int deny_summary_new(uint16_t group, unsigned interval_s, DenySummaryEmitFn emit, void *userdata, DenySummary **ret,
                     SeatError **ret_error) {
        if (group == 0 || interval_s == 0 || !emit)
                return seat_error_set(ret_error, EINVAL, "denied-flow summaries need a log group and an interval");
        _cleanup_(deny_summary_freep) DenySummary *d = calloc(1, sizeof(*d));
        int r;

        if (!d)
                return -ENOMEM;
        d->fd = -EBADF;
        d->group = group;
        d->interval_s = interval_s;
        d->emit = emit;
        d->userdata = userdata;
        pthread_mutex_init(&d->lock, NULL);
        pthread_mutex_init(&d->emit_lock, NULL);
        d->table = deny_table_new();
        if (!d->table)
                return -ENOMEM;
        r = nflog_open(group, RECEIVE_TIMEOUT_MS, &d->fd);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot bind nfnetlink_log group %u: %s%s", group, strerror(-r),
                                      r == -EPERM || r == -EBUSY ? " (another program, e.g. another seatd, may hold it: set deny_log_group in seatd.conf)" : "");
        r = -pthread_create(&d->thread, NULL, deny_thread, d);
        if (r < 0)
                return seat_error_set(ret_error, -r, "cannot start the denied-flow summary thread: %s", strerror(-r));
        d->started = true;
        *ret = TAKE_PTR(d);
        return 0;
}

DenySummary *deny_summary_free(DenySummary *d) {
        if (!d)
                return NULL;
        if (d->started) {
                __atomic_store_n(&d->stop, true, __ATOMIC_RELEASE);
                pthread_join(d->thread, NULL);
        }
        if (d->table)
                deny_summary_flush(d, NULL, NULL, NULL);
        if (d->fd >= 0)
                close(d->fd);
        deny_table_free(d->table);
        pthread_mutex_destroy(&d->lock);
        pthread_mutex_destroy(&d->emit_lock);
        return mfree(d);
}
