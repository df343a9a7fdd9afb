/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* capture.c: libpcap on a seat's bridge, into a CaptureRing, on a thread of its own. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "capture.h"
#include "common/fileio.h"
#include "common/macro.h"

#if HAVE_PCAP
#include <pcap/pcap.h>

#define CAPTURE_KERNEL_BUFFER (8u * 1024u * 1024u)
#define CAPTURE_POLL_MS 200
/* The thread runs SCHED_IDLE: only on CPU time nothing else wants. The guest's traffic
 * (forwarded in the sender's context) comes before writing its copy: a task that wakes takes
 * the CPU from this thread at once (at nice 19 it could keep it for its slice), and under a
 * flood the capture falls behind and the kernel drops from its buffer, counted as
 * kernel_drops. If SCHED_IDLE is refused, nice 19. Measured: tests/bench/bench-egress.sh. */
#define CAPTURE_NICE 19

/* The write budget: at most the cap (max_bytes) a second, and never less than
 * CAPTURE_RATE_MIN, in bursts of up to half of that. A flood faster than the cap a second
 * turns the whole ring over within a second: writing it all only to remove it again took
 * the CPUs the guest's traffic needs (bench-egress.sh: the thread wrote 400 MB/s of files
 * it then removed, on half a core, and the guest's throughput fell by a quarter). Past the
 * budget the thread stops reading for a while; the kernel drops from its buffer meanwhile,
 * counted in kernel_drops like any drop (the capture is marked incomplete). The floor keeps
 * a small cap's capture of an ordinary burst whole. */
#define CAPTURE_RATE_MIN (16 * 1024 * 1024)
#define CAPTURE_BURST_DIVISOR 2
/* Packets one pcap_dispatch() hands over at most. With -1 (all there are) libpcap's
 * TPACKET_V3 reader goes on while the next block is ready: under a flood faster than the
 * thread, forever, with the stop, the budget and the counters unseen. */
#define CAPTURE_DISPATCH_MAX 256
/* The stop's last reading, at most: the kernel's open block retires within CAPTURE_POLL_MS,
 * so two of those and a margin (a stop while a machine still sends must not wait long). */
#define CAPTURE_DRAIN_MS 1000

struct Capture {
        pcap_t *pcap;
        bool read_failed;         /* the reading thread's only */
        uint64_t handed;          /* packets libpcap handed over (the thread's only) */
        int64_t rate, burst;      /* bytes a second, bytes: the write budget (thread's only) */
        int64_t budget;           /* what may be written now; below 0: wait */
        struct timespec refilled;
        CaptureRing *ring;
        int dir_fd, stop_fd;
        pthread_t thread;
        pthread_mutex_t lock;     /* snapshot */
        CaptureStats snapshot;
        /* Readers (status) only try c->lock: the thread holding it runs SCHED_IDLE and may
         * wait long for a CPU while it does. They get the last copy they took instead. */
        pthread_mutex_t read_lock; /* read_copy */
        CaptureStats read_copy;
};

bool capture_supported(void) {
        return true;
}

static void on_packet(u_char *user, const struct pcap_pkthdr *h, const u_char *data) {
        Capture *c = (Capture *) user;
        c->handed++;
        uint64_t ts = (uint64_t) h->ts.tv_sec * 1000000u + (uint64_t) h->ts.tv_usec;
        capture_ring_write(c->ring, ts, data, h->caplen, h->len);
        c->budget -= capture_ring_block_bytes(h->caplen); /* what the file grew by */
}

/* The budget refilled for the time since the last refill; the ms until it is above 0 again
 * (0: it is). */
static int budget_refill(Capture *c) {
        struct timespec now;
        (void) clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t us = (now.tv_sec - c->refilled.tv_sec) * 1000000 + (now.tv_nsec - c->refilled.tv_nsec) / 1000;
        us = MIN(MAX(us, (int64_t) 0), (int64_t) 1000000); /* ≤ 1 s: no overflow, and the burst caps it anyway */
        c->refilled = now;
        /* at least -burst: one dispatch's overshoot is not paid back for long */
        c->budget = MAX(MIN(c->budget + us * c->rate / 1000000, c->burst), -c->burst);
        if (c->budget >= 0)
                return 0;
        return (int) MIN(-c->budget * 1000 / c->rate + 1, (int64_t) CAPTURE_POLL_MS);
}

static void publish(Capture *c) {
        struct pcap_stat ps;
        CaptureStats st;
        capture_ring_stats(c->ring, &st);
        st.read_failed = c->read_failed;
        if (pcap_stats(c->pcap, &ps) == 0)
                st.kernel_drops = (uint64_t) ps.ps_drop + ps.ps_ifdrop;
        else {
                pthread_mutex_lock(&c->lock);
                st.kernel_drops = c->snapshot.kernel_drops;
                pthread_mutex_unlock(&c->lock);
        }
        pthread_mutex_lock(&c->lock);
        c->snapshot = st;
        pthread_mutex_unlock(&c->lock);
}

/* Frames the kernel took for this socket that libpcap has not handed over yet: they sit in
 * a block not retired. The kernel's count (ps_recv) includes its drops; compared modulo
 * 2^32, as libpcap keeps it. Unknown: assume some. */
static bool frames_pending(Capture *c) {
        struct pcap_stat ps;
        if (pcap_stats(c->pcap, &ps) != 0)
                return true;
        return (uint32_t) (ps.ps_recv - ps.ps_drop - (uint32_t) c->handed) != 0;
}

static void *capture_thread(void *p) {
        Capture *c = p;
        struct sched_param sp = { .sched_priority = 0 };
        if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
                (void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), CAPTURE_NICE);
        struct pollfd fds[2] = { { .fd = c->stop_fd, .events = POLLIN },
                                 { .fd = pcap_get_selectable_fd(c->pcap), .events = POLLIN } };
        (void) clock_gettime(CLOCK_MONOTONIC, &c->refilled);
        c->budget = c->burst;
        for (;;) {
                int wait_ms = budget_refill(c);
                /* Over the budget: only the stop is watched until it refills. */
                int n = poll(fds, wait_ms > 0 ? 1 : 2, wait_ms > 0 ? wait_ms : CAPTURE_POLL_MS);
                if (n < 0 && errno != EINTR) {
                        c->read_failed = true;
                        break;
                }
                if (wait_ms > 0) {
                        publish(c);
                        if (fds[0].revents & POLLIN)
                                break;
                        continue;
                }
                /* Whatever libpcap holds, poll or not: a block is handed over when full or
                 * at its timeout. Non-blocking: returns at once when there is nothing. An
                 * error: the interface went away (its seat's network removed under it). */
                if (pcap_dispatch(c->pcap, CAPTURE_DISPATCH_MAX, on_packet, (u_char *) c) == PCAP_ERROR) {
                        c->read_failed = !(fds[0].revents & POLLIN);
                        break;
                }
                publish(c);
                if (fds[0].revents & POLLIN)
                        break;
        }
        /* The last of it: what arrived before the stop (the machine was taken off the
         * bridge first, so nothing of the next session). Back to SCHED_OTHER for it if
         * allowed (CAP_SYS_NICE): the stop waits on this thread. libpcap hands over only
         * the blocks the kernel has retired (TPACKET_V3), and the kernel retires one that
         * holds frames at its timeout (CAPTURE_POLL_MS): so whenever a dispatch finds
         * nothing while the kernel holds frames not handed over, wait up to two timeouts
         * for that block (an idle guest's stop does not wait). At most CAPTURE_DRAIN_MS in
         * all, for a stop that comes while a machine still sends (seatd's exit). */
        struct sched_param sp_other = { .sched_priority = 0 };
        (void) pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp_other);
        int64_t t0 = now_monotonic_ms();
        for (;;) {
                int got = pcap_dispatch(c->pcap, CAPTURE_DISPATCH_MAX, on_packet, (u_char *) c);
                if (got == PCAP_ERROR)
                        break;
                int64_t spent = now_monotonic_ms() - t0;
                if (spent >= CAPTURE_DRAIN_MS)
                        break;
                if (got > 0)
                        continue;
                if (!frames_pending(c))
                        break;
                int n = poll(&fds[1], 1, (int) MIN((int64_t) 2 * CAPTURE_POLL_MS, CAPTURE_DRAIN_MS - spent));
                if (n == 0 || (n < 0 && errno != EINTR))
                        break;
        }
        publish(c);
        return NULL;
}

static void capture_free(Capture *c) {
        if (!c)
                return;
        if (c->pcap)
                pcap_close(c->pcap);
        capture_ring_close(c->ring);
        if (c->dir_fd >= 0)
                close(c->dir_fd);
        if (c->stop_fd >= 0)
                close(c->stop_fd);
        pthread_mutex_destroy(&c->lock);
        pthread_mutex_destroy(&c->read_lock);
        free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Capture *, capture_free)

static int open_pcap(Capture *c, const CaptureParams *p, SeatError **ret_error) {
        char err[PCAP_ERRBUF_SIZE] = "";
        c->pcap = pcap_create(p->ifname, err);
        if (!c->pcap)
                return seat_error_set(ret_error, ENODEV, "capture on '%s': %s", p->ifname, err);
        /* Promiscuous: frames the guest sends to any MAC, not only to the bridge's own
         * (the bridge passes them up only then). Not immediate: libpcap hands over blocks,
         * which costs the guest's throughput least; the 200 ms timeout bounds the delay. */
        if (pcap_set_snaplen(c->pcap, (int) p->snaplen) != 0 || pcap_set_promisc(c->pcap, 1) != 0 ||
            pcap_set_timeout(c->pcap, CAPTURE_POLL_MS) != 0 ||
            pcap_set_buffer_size(c->pcap, (int) CAPTURE_KERNEL_BUFFER) != 0)
                return seat_error_set(ret_error, EINVAL, "capture on '%s': cannot set its options", p->ifname);
        int k = pcap_activate(c->pcap);
        if (k < 0)
                return seat_error_set(ret_error, k == PCAP_ERROR_PERM_DENIED ? EPERM : ENODEV,
                                      "capture on '%s': %s", p->ifname, pcap_geterr(c->pcap));
        if (pcap_datalink(c->pcap) != DLT_EN10MB)
                return seat_error_set(ret_error, EPROTONOSUPPORT, "capture on '%s': not an Ethernet interface",
                                      p->ifname);
        if (pcap_setnonblock(c->pcap, 1, err) != 0 || pcap_get_selectable_fd(c->pcap) < 0)
                return seat_error_set(ret_error, EIO, "capture on '%s': cannot poll it: %s", p->ifname, err);
        return 0;
}

int capture_start(const CaptureParams *p, Capture **ret, SeatError **ret_error) {
        _cleanup_(capture_freep) Capture *c = calloc(1, sizeof(*c));
        int k;
        if (!c)
                return -ENOMEM;
        c->dir_fd = c->stop_fd = -1;
        c->rate = (int64_t) MAX(p->max_bytes, (uint64_t) CAPTURE_RATE_MIN);
        c->burst = c->rate / CAPTURE_BURST_DIVISOR;
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->read_lock, NULL);
        c->dir_fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->dir_fd < 0)
                return seat_error_set(ret_error, errno, "capture: cannot open '%s': %m", p->dir);
        c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->stop_fd < 0)
                return -errno;
        k = open_pcap(c, p, ret_error);
        if (k < 0)
                return k;
        k = capture_ring_new(c->dir_fd, p->prefix, p->ifname, 1 /* LINKTYPE_ETHERNET */, p->snaplen, p->max_bytes,
                             &c->ring);
        if (k < 0)
                return seat_error_set(ret_error, -k, "capture: cannot start its files in '%s': %s", p->dir,
                                      strerror(-k));
        k = -pthread_create(&c->thread, NULL, capture_thread, c);
        if (k < 0)
                return seat_error_set(ret_error, -k, "capture on '%s': cannot start its thread", p->ifname);
        *ret = TAKE_PTR(c);
        return 0;
}

void capture_stats(Capture *c, CaptureStats *ret) {
        pthread_mutex_lock(&c->read_lock);
        if (pthread_mutex_trylock(&c->lock) == 0) {
                c->read_copy = c->snapshot;
                pthread_mutex_unlock(&c->lock);
        }
        *ret = c->read_copy;
        pthread_mutex_unlock(&c->read_lock);
}

void capture_stop(Capture *c, CaptureStats *ret) {
        uint64_t one = 1;
        if (!c)
                return;
        (void) !write(c->stop_fd, &one, sizeof(one));
        pthread_join(c->thread, NULL);
        /* Flushed, synced and closed before the numbers are taken: a write that fails
         * only now still makes the capture incomplete (its manifest says so). */
        capture_ring_finish(c->ring);
        if (ret) {
                capture_ring_stats(c->ring, ret); /* the thread is gone: nobody else writes */
                ret->read_failed = c->snapshot.read_failed;
                ret->kernel_drops = c->snapshot.kernel_drops;
        }
        capture_free(c);
}

#else /* !HAVE_PCAP */

struct Capture {
        int unused;
};

bool capture_supported(void) {
        return false;
}

int capture_start(const CaptureParams *p, Capture **ret, SeatError **ret_error) {
        return seat_error_set(ret_error, EOPNOTSUPP,
                              "capture on '%s': this seatd was built without libpcap (install libpcap-dev and rebuild)",
                              p->ifname);
}

void capture_stats(Capture *c, CaptureStats *ret) {
        *ret = (CaptureStats) {};
}

void capture_stop(Capture *c, CaptureStats *ret) {
        if (ret)
                *ret = (CaptureStats) {};
}
#endif
