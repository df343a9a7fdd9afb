/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seatd's seats, private to seat*.c: the Seat and SeatManager structures and the
 * functions the seat files share. What the rest of seatd may use is in seat.h. */
#pragma once

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include "common/fileio.h"
#include "signing/hash.h"
#include "common/jsonframe.h"
#include "common/log.h"
#include "changes.h"
#include "metrics.h"
#include "seat.h"
#include "seat-log.h"
#include "seatnet.h"
#include "deny-summary.h"
#include "network/capture.h"
#include "images/qcow2.h"
#include "evidence/archive.h"
#include "evidence/audit.h"
#include "signing/boxkey.h"
#include "signing/minisign.h"
#include "warm-state.h"
#include "seal.h"

/* Each seat slot alternates between two libvirt identities (domain name, UUID, saved
 * state): the generation's parity picks one, so a reset can boot one identity while the
 * other one's machine is still being destroyed. */
typedef int SeatIdentity;

#define AGENT_BOOT_TIMEOUT_KVM_MS 60000
#define AGENT_BOOT_TIMEOUT_TCG_MS 180000
#define AGENT_CALL_TIMEOUT_MS 30000
#define ADOPT_HELLO_TIMEOUT_MS 20000
#define PARTICIPANT_MAX 64
#define WARM_AGENT_TIMEOUT_MS 20000 /* a restored guest answers at once: its agent was up when saved */
#define WARM_MAKE_PARALLEL 1        /* saved states made at a time (each is a boot beside the seats) */
#define POOL_CLAIM_PING_MS 2000     /* a pooled seat's agent answers a ping in milliseconds when healthy */

/* The save file as it was when last hashed: the same inode, size, mtime and ctime (which
 * nothing but a write changes) is the same bytes, so a reset need not hash it again. */
typedef struct WarmSeen {
        bool valid;
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtim, ctim;
        char hash[SEAT_HASH_HEX_LEN + 1];
} WarmSeen;

/* What seat.status and seat.console show of a seat, as of its last change.
 *
 * Both answer on the event loop (and status also on worker threads) without s->lock: a
 * reset holds that lock for its whole boot (seconds, up to minutes under TCG), and a
 * status that waited for it would stall every client of seatd behind one seat. Reading the
 * fields themselves without the lock raced with reset, release and faults, which free and
 * replace them. So whoever changes them (holding s->lock) copies what is shown here with
 * seat_view_publish(), and readers copy it out again; view_lock is held for those copies
 * only, and nothing else is locked under it.
 *
 * A copy rather than the fields themselves under a second short lock: s->dom alone is
 * replaced at a dozen places, some of them inside libvirt calls that write it through a
 * pointer, and every one would have to take that lock; a copy cannot be freed under its
 * reader, and a change not yet published shows as the value before it, never as freed
 * memory. */
typedef struct SeatView {
        char domain[64];          /* the machine's libvirt name, "" while it has none */
        char *overlay;            /* its disk, for used_bytes (NULL: none) */
        char *console_log;        /* this session's serial console log (NULL: none) */
        char *fault, *seal_fault;
        DomainConfinement confinement;
        uint64_t disk_virtual;
        int64_t generation, image_version;
        char participant[sizeof(((SeatRecord *) NULL)->participant)];
} SeatView;

/* A seat's packet capture (seat-capture.c); the whole of it under the manager's lock. */
typedef struct SeatCapture {
        Capture *c;               /* running, or NULL */
        int64_t generation;       /* the session whose files it writes */
        uint32_t snaplen;
        uint64_t max_bytes;
        CaptureStats prev;        /* this session's capture before a seatd restart */
        uint64_t restarts;        /* seatd restarts during this session */
        bool counts_lost;         /* one of them left files but no counters (killed) */
} SeatCapture;

static inline void seat_view_done(SeatView *v) {
        free(v->overlay);
        free(v->console_log);
        free(v->fault);
        free(v->seal_fault);
        *v = (SeatView) {};
}

struct Seat {
        unsigned refs;            /* under the manager's lock */
        pthread_mutex_t lock;     /* one operation at a time */
        /* rec.generation and rec.token_hash change under lock and ticket_lock both; the
         * event loop authorises requests under ticket_lock alone (never waits for lock). */
        pthread_mutex_t ticket_lock;
        unsigned preempting;      /* atomic: resets and releases waiting for lock */
        /* Calls into the guest running now (seat-exec.c), each on its own agent handle:
         * changed under lock, read atomically; a reset or release waits on calls_done
         * (with lock) until there are none before it touches the agent or the machine. */
        unsigned calls;
        int64_t last_call;  /* seconds since the epoch the last agent call began; 0: none (atomic) */
        pthread_cond_t calls_done;
        SeatManager *m;
        SeatRecord rec;
        SeatState state;
        /* Replaced under lock and the manager's lock both: disk_promised_locked() reads
         * every seat's overlay under the latter. */
        char *dir, *overlay, *console_log;
        virDomainPtr dom;
        AgentClient *agent;
        char *fault;
        AuditLog *audit;          /* this session's tool calls and events; under audit_lock */
        pthread_mutex_t audit_lock; /* appends may come while an operation holds lock */
        char *seal_fault;         /* the last session's evidence could not be sealed */
        SeatNet *net;             /* its network (NULL: none); the pointer under the manager's lock */
        SeatCapture capture;      /* its profile's "capture on"; under the manager's lock */
        char live_domain[64];     /* the running domain's name; under the manager's lock */
        uint64_t disk_virtual;    /* its disk's virtual size: what its overlay may grow to */
        uint64_t disk_pending;    /* admitted for its boot, settled when the boot is over */
        DomainConfinement confinement; /* of its running QEMU, as checked at its start */
        bool net_paused;          /* atomic: stopped because its egress rules were changed */
        unsigned tamper_count;    /* under the manager's lock */
        json_object *last_tamper; /* under the manager's lock */
        /* Warm reset (docs/warm-reset.md): a slot has two machine identities, g1 and g2
         * (odd and even generations), each with its own saved state. A reset boots the
         * other identity while the old one's destroy finishes beside it. */
        char *reset_mode, *reset_reason; /* how this generation came up ("warm", "cold"), and why cold */
        pthread_mutex_t warm_lock;      /* warm_standby, teardown_fault, destroyer[], destroying[] */
        char *warm_standby;             /* what the next reset can restore */
        char *teardown_fault;           /* an old machine's destroy failed */
        char *progress;                 /* what its boot waits for (the readiness check), or NULL */
        pthread_t destroyer[2];
        bool destroying[2];
        /* Pools (seatd/pool.c): under the manager's lock. */
        bool pooled;                    /* READY in its pool, nobody's: claimable (rec.pooled in libvirt) */
        bool pool_broken;               /* failed its health check when claimed: the pool releases it */
        bool from_pool;                 /* this participant's seat was claimed from a pool */
        uint64_t pool_seq;              /* claims take the oldest pooled seat first */
        uint64_t memory_mib;            /* its machine's memory, for the pools' host limit */
        pthread_t warm_make_thread;     /* makes or checks the standby identity's state */
        bool warm_make_running;         /* under s->lock */
        bool warm_make_cancel;          /* under m->warm_make_lock */
        WarmSeen seen[2];               /* by warm_make_thread, or under s->lock once it is joined */
        char **evidence_paths;    /* the image's evidence_paths for this session (NULL: unknown) */
        char *evidence_fs;        /* and the filesystem holding them (guest_init's), or NULL */
        pthread_mutex_t view_lock; /* a leaf: held only to copy view in or out */
        SeatView view;             /* what status and console read (see SeatView) */
        /* The uid pair (rec.qemu_uid, +1) its two machine identities run as: the slots of
         * the manager's uid table it holds (-1: none), until the seat is freed. */
        long uid_slot[2];
};

struct SeatManager {
        const SeatConfig *config;
        ImageStore *store;
        virConnectPtr conn;       /* under conn_lock; reopened when libvirtd went away */
        pthread_mutex_t conn_lock;
        pthread_mutex_t lock;
        Seat **seats;
        size_t n_seats;
        char *seats_dir, *quarantine_dir;
        const char *archives_dir;         /* config->evidence_archive_dir */
        SeatSecretKey *host_key;          /* signs evidence archives */
        SeatBoxPublicKey facilitator;     /* archives are sealed to it */
        bool have_facilitator;
        SeatNetManager *net;              /* seat networks and their egress filter */
        DenySummary *deny;                /* denied-flow summaries; NULL: off */
        uint64_t disk_pending;            /* admitted, not yet in the table; under lock */
        unsigned booting;                 /* seats booting new, not yet in the table; under lock */
        char *warm_dir;                   /* <state_dir>/warm: saved states, 0711; files 0600 */
        uint8_t warm_key[WARM_KEY_BYTES]; /* MACs their sidecars */
        pthread_mutex_t warm_make_lock;
        pthread_cond_t warm_make_cond;
        unsigned warm_make_active;
        SeatPoolFn pool_fn;               /* told when a pool's seats change (seatd/pool.c) */
        void *pool_userdata;
        uint64_t pool_seq;                /* under lock */
        /* QEMU uids (qemu_uid_range): slot i is the pair uid_first + 2i and
         * the next; uid_slot_used[i] under lock. */
        uid_t uid_first;
        size_t n_uid_slots;
        bool *uid_slot_used;
        Changes changes;                  /* bumped on every published change (events.subscribe) */
        Metrics metrics;                  /* the `metrics` method's counters and histograms */
};


/* The verified blobs a domain of this image boots from. */
typedef struct SpecFiles {
        char *kernel, *initrd, *base;
        const ImageFile *disk;
} SpecFiles;


typedef struct WarmPaths {
        char *dir, *save, *overlay, *meta, *save_tmp, *overlay_tmp, *console;
} WarmPaths;

/* Shared between the seat files; each is defined in the file named above its group. */

/* seat.c */
void identity_domain_name(const char *id, SeatIdentity k, char *buf, size_t size);
virConnectPtr manager_conn(SeatManager *m, SeatError **ret_error);
int new_token(Seat *s, bool next_generation, char **ret);
/* Under s->lock: is the ticket still for this session? */
int ticket_check(Seat *s, const SeatTicket *t, SeatError **ret_error);
/* A reset or release waits for the seat's lock: a running exec gives it up. */
bool preempted(Seat *s);
/* pooled: for a pool, nobody's. capped: only within pool_max_seats, counting the seats
 * still booting (seat.c: boot_admit()). */
int provision_new(SeatManager *m, const char *image, const char *participant, const char *egress, bool pooled, bool capped,
                  Seat **ret, char **ret_token, SeatError **ret_error);
void random_hex(char *out, size_t bytes);
void seat_domain_name(const SeatRecord *rec, char *buf, size_t size);
void seat_fault(Seat *s, const char *why);
void seat_free(Seat *s);
Seat *seat_new(SeatManager *m, unsigned refs);
int seat_identity(int64_t generation);
int seat_paths(SeatManager *m, Seat *s);
void seat_set_state(Seat *s, SeatState st);
void set_live_domain(SeatManager *m, Seat *s, const char *name);
int start_fresh(SeatManager *m, const ImageManifest *man, bool kvm, const char *name, const char *overlay,
                       const char *console_log, const SeatRecord *rec, const char *iface, uid_t uid, virDomainPtr *ret,
                       SeatError **ret_error);
int seat_table_add(SeatManager *m, Seat *s);
void tamper_record(SeatManager *m, Seat *s, NftSeatState st, int64_t detected, int64_t paused, bool ok_pause,
                          int64_t resumed, const char *restore_error);

/* seat-uid.c */
int adopt_uids(SeatManager *m, Seat *s, SeatError **ret_error);
uid_t identity_uid(const SeatRecord *rec, SeatIdentity k);
void seat_uid_release(SeatManager *m, Seat *s);
int seat_uid_take(SeatManager *m, Seat *s, SeatError **ret_error);
int uid_table_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error);

/* seat-status.c */
void seat_view_publish(Seat *s);

/* seat-session.c */
int audit_paths(const Seat *s, char **ret_log, char **ret_key);
int load_evidence_keys(SeatManager *m, const SeatConfig *config, SeatError **ret_error);
int session_quarantine(SeatManager *m, Seat *s, char **ret_dir, SeatError **ret_error);
int remember_evidence_paths(Seat *s, const ImageManifest *man);
void resume_pending_seals(SeatManager *m);
void seal_dir_in_background(SeatManager *m, Seat *s, const char *seat_id, char *dir);
void seal_in_background(SeatManager *m, Seat *s, bool keep_ref, char *dir);
void session_close(Seat *s);
int session_open(SeatManager *m, Seat *s, SeatError **ret_error);

/* seat-warm.c */
void identity_join(Seat *s, SeatIdentity k);
void warm_state_make_start(SeatManager *m, Seat *s);
void warm_state_make_stop(SeatManager *m, Seat *s);
void set_reset_mode(Seat *s, const char *mode, const char *why);
/* seat-ready.c: the image's readiness check (agent capability "ready-check"), run after the
 * agent is configured; 0 at once for agents without it. set_progress: what status shows
 * while a seat comes up (NULL: nothing), also told to the thread's job. */
int seat_wait_ready(SeatManager *m, Seat *s, SeatError **ret_error);
/* The same loop on any agent (warm_make's standby machine): id for the log, who names the
 * machine in messages; p->report is told each wait and NULL at the end, p->cancelled
 * (may be NULL) stops it with -ECANCELED. */
int ready_check_wait(SeatManager *m, AgentClient *agent, const char *id, const char *who, const SeatBootProgress *p,
                     SeatError **ret_error);
void set_progress(Seat *s, const char *what);
void warm_forget(SeatManager *m, Seat *s);
int warm_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error);
int warm_paths(SeatManager *m, const char *id, SeatIdentity k, WarmPaths *p);
void warm_paths_done(WarmPaths *p);
void warm_remove(const WarmPaths *p);
int warm_restore(SeatManager *m, Seat *s, const ImageManifest *man, bool kvm, char **ret_why);
void warm_set_standby(Seat *s, const char *fmt, ...) _printf_(2, 3);

/* seat-net.c */
void deny_summary_start(SeatManager *m);
void deny_summary_flush_seat(Seat *s);
char *egress_saved_path(const Seat *s);
int handover_network(Seat *s, SeatError **ret_error);
void on_net_tamper(const char *seat_id, NftSeatState st, void *userdata);
void on_guard_failed(const char *seat_id, const char *why, void *userdata);
void seat_net_down(SeatManager *m, Seat *s);
int seat_net_attach(SeatManager *m, Seat *s, const char *egress, int net_index, const char *profile_text,
                    SeatNet **ret_net, SeatError **ret_error);
int seat_net_up(SeatManager *m, Seat *s, const char *egress, SeatError **ret_error);

/* seat-capture.c */
int seat_capture_start(SeatManager *m, Seat *s, SeatError **ret_error);
void seat_capture_stop(SeatManager *m, Seat *s);
int seat_capture_quarantine(Seat *s, const char *q, SeatError **ret_error);
void seat_capture_remove(SeatManager *m, Seat *s);
json_object *seat_capture_to_json_locked(Seat *s);

/* seat-pool.c */
int pool_claim(SeatManager *m, Seat *s, const char *participant, char **ret_token, SeatError **ret_error);
void pool_notify(SeatManager *m, SeatPoolEvent ev, const char *image, const char *egress);

/* seat-boot.c */
int disk_reserve(SeatManager *m, const char *dir, const Seat *except, uint64_t need, uint64_t *ret_avail,
                 uint64_t *ret_promised, SeatError **ret_error);
int boot_seat(SeatManager *m, Seat *s, const char *cold_why, SeatError **ret_error);
int connect_agent(Seat *s, bool fresh, int timeout_ms, SeatError **ret_error);
uint64_t disk_promised_locked(SeatManager *m, const Seat *except);
void disk_settle(SeatManager *m, Seat *s);
uint64_t file_allocated(const char *path);
int hello_failed(const char *kind, const char *name, const char *image, int64_t version, SeatError **ret_error);
int open_agent(Seat *s, int timeout_ms, SeatError **ret_error);
int spec_files(SeatManager *m, const ImageManifest *man, SpecFiles *f);
void spec_files_done(SpecFiles *f);
