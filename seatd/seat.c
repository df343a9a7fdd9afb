/* SPDX-License-Identifier: LGPL-2.1-or-later */
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

#include "fileio.h"
#include "hash.h"
#include "jsonframe.h"
#include "log.h"
#include "seat.h"
#include "seat-log.h"
#include "seatnet.h"
#include "qcow2.h"
#include "archive.h"
#include "audit.h"
#include "boxkey.h"
#include "minisign.h"
#include "warm-state.h"
#include "seal.h"

#define AGENT_BOOT_TIMEOUT_KVM_MS 60000
#define AGENT_BOOT_TIMEOUT_TCG_MS 180000
#define AGENT_CALL_TIMEOUT_MS 30000
#define ADOPT_HELLO_TIMEOUT_MS 20000
#define PARTICIPANT_MAX 64
#define WARM_AGENT_TIMEOUT_MS 20000 /* a restored guest answers at once: its agent was up when saved */
#define WARM_PREP_PARALLEL 1        /* saved states made at a time (each is a boot beside the seats) */
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
 * replace them (security review, issue 13 finding 9). So whoever changes them (holding
 * s->lock) copies what is shown here with seat_view_publish(), and readers copy it out
 * again; view_lock is held for those copies only, and nothing else is locked under it.
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

static void seat_view_done(SeatView *v) {
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
        pthread_t destroyer[2];
        bool destroying[2];
        /* Pools (seatd/pool.c): under the manager's lock. */
        bool pooled;                    /* READY in its pool, nobody's: claimable (rec.pooled in libvirt) */
        bool pool_broken;               /* failed its health check when claimed: the pool releases it */
        bool from_pool;                 /* this participant's seat was claimed from a pool */
        uint64_t pool_seq;              /* claims take the oldest pooled seat first */
        uint64_t memory_mib;            /* its machine's memory, for the pools' host limit */
        pthread_t prep;                 /* makes or checks the standby identity's state */
        bool prep_running;              /* under s->lock */
        bool prep_cancel;               /* under m->prep_lock */
        WarmSeen seen[2];               /* by the prep thread, or under s->lock once it is joined */
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
        uint64_t disk_pending;            /* admitted, not yet in the table; under lock */
        char *warm_dir;                   /* <state_dir>/warm: saved states, 0711; files 0600 */
        uint8_t warm_key[WARM_KEY_BYTES]; /* MACs their sidecars */
        pthread_mutex_t prep_lock;
        pthread_cond_t prep_cond;
        unsigned prep_active;
        SeatPoolFn pool_fn;               /* told when a pool's seats change (seatd/pool.c) */
        void *pool_userdata;
        uint64_t pool_seq;                /* under lock */
        /* QEMU uids (qemu_uid_range, issue 13 #8): slot i is the pair uid_first + 2i and
         * the next; uid_slot_used[i] under lock. */
        uid_t uid_first;
        size_t n_uid_slots;
        bool *uid_slot_used;
};

static const char *const state_names[] = {
        [SEAT_PROVISIONING] = "provisioning", [SEAT_READY] = "ready",       [SEAT_RESETTING] = "resetting",
        [SEAT_FAULTED] = "faulted",           [SEAT_RELEASED] = "released",
};

const char *seat_state_to_string(SeatState st) {
        return st <= SEAT_RELEASED ? state_names[st] : "unknown";
}

const char *seat_id(const Seat *s) {
        return s->rec.id;
}

static char *strdup_or_null(const char *p) {
        return p ? strdup(p) : NULL;
}

/* Copy what status shows into s->view. The caller holds s->lock (or s is not shared yet):
 * every field read here is written only by the holder of s->lock (disk_virtual also under
 * the manager's lock, for the disk admission of other seats). A string that cannot be
 * copied shows as absent until the next publish. */
static void seat_view_publish(Seat *s) {
        SeatView v = { .overlay = strdup_or_null(s->overlay), .console_log = strdup_or_null(s->console_log),
                       .fault = strdup_or_null(s->fault), .seal_fault = strdup_or_null(s->seal_fault),
                       .confinement = s->confinement, .generation = s->rec.generation,
                       .image_version = s->rec.image_version };
        const char *name = s->dom ? virDomainGetName(s->dom) : NULL;
        (void) snprintf(v.domain, sizeof(v.domain), "%s", name ? name : "");
        (void) snprintf(v.participant, sizeof(v.participant), "%s", s->rec.participant);
        pthread_mutex_lock(&s->m->lock);
        v.disk_virtual = s->disk_virtual;
        pthread_mutex_unlock(&s->m->lock);
        pthread_mutex_lock(&s->view_lock);
        SeatView old = s->view;
        s->view = v;
        pthread_mutex_unlock(&s->view_lock);
        seat_view_done(&old);
}

/* A copy of s->view, from any thread, without waiting for s->lock (seat_view_done() it). */
static int seat_view_get(Seat *s, SeatView *ret) {
        pthread_mutex_lock(&s->view_lock);
        SeatView v = s->view;
        v.overlay = strdup_or_null(s->view.overlay);
        v.console_log = strdup_or_null(s->view.console_log);
        v.fault = strdup_or_null(s->view.fault);
        v.seal_fault = strdup_or_null(s->view.seal_fault);
        bool lost = (s->view.overlay && !v.overlay) || (s->view.console_log && !v.console_log) ||
                    (s->view.fault && !v.fault) || (s->view.seal_fault && !v.seal_fault);
        pthread_mutex_unlock(&s->view_lock);
        if (lost) {
                seat_view_done(&v);
                return -ENOMEM;
        }
        *ret = v;
        return 0;
}

int seat_console_path(Seat *s, char **ret) {
        SeatView v;
        int r = seat_view_get(s, &v);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v.console_log);
        seat_view_done(&v);
        return 0;
}

SeatState seat_state(Seat *s) {
        return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

/* Under s->lock (or before s is shared). Every transition publishes what status shows. */
static void seat_set_state(Seat *s, SeatState st) {
        __atomic_store_n(&s->state, st, __ATOMIC_RELEASE);
        snprintf(s->rec.state, sizeof(s->rec.state), "%s", state_names[st]);
        seat_view_publish(s);
}

/* ---- the table ---- */

static void seat_uid_release(SeatManager *m, Seat *s);

static void seat_free(Seat *s) {
        seat_uid_release(s->m, s);
        free(s->reset_mode);
        free(s->reset_reason);
        free(s->warm_standby);
        free(s->teardown_fault);
        pthread_mutex_destroy(&s->warm_lock);
        audit_log_free(s->audit);
        /* Only the memory: a seat still running keeps its network for the next seatd. */
        seatnet_forget(s->m->net, s->net);
        json_object_put(s->last_tamper);
        pthread_mutex_destroy(&s->audit_lock);
        free(s->seal_fault);
        strv_free(s->evidence_paths);
        free(s->evidence_fs);
        agent_client_free(s->agent);
        if (s->dom)
                virDomainFree(s->dom);
        free(s->dir);
        free(s->overlay);
        free(s->console_log);
        free(s->fault);
        seat_view_done(&s->view);
        pthread_mutex_destroy(&s->view_lock);
        pthread_mutex_destroy(&s->ticket_lock);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

void seat_unref(Seat *s) {
        if (!s)
                return;
        SeatManager *m = s->m;
        pthread_mutex_lock(&m->lock);
        bool last = --s->refs == 0;
        pthread_mutex_unlock(&m->lock);
        if (last)
                seat_free(s);
}

static int table_add(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->lock);
        Seat **n = realloc(m->seats, (m->n_seats + 1) * sizeof(Seat *));
        if (n) {
                m->seats = n;
                m->seats[m->n_seats++] = s;
                s->refs++;
        }
        pthread_mutex_unlock(&m->lock);
        return n ? 0 : -ENOMEM;
}

static void table_remove(SeatManager *m, Seat *s) {
        bool found = false;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++)
                if (m->seats[i] == s) {
                        m->seats[i] = m->seats[--m->n_seats];
                        found = true;
                        break;
                }
        pthread_mutex_unlock(&m->lock);
        if (found)
                seat_unref(s);
}

Seat *seat_manager_get(SeatManager *m, const char *id) {
        Seat *r = NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats && !r; i++)
                if (!strcmp(m->seats[i]->rec.id, id)) {
                        r = m->seats[i];
                        r->refs++;
                }
        pthread_mutex_unlock(&m->lock);
        return r;
}

Seat **seat_manager_all(SeatManager *m) {
        pthread_mutex_lock(&m->lock);
        Seat **all = calloc(m->n_seats + 1, sizeof(Seat *));
        for (size_t i = 0; all && i < m->n_seats; i++) {
                all[i] = m->seats[i];
                all[i]->refs++;
        }
        pthread_mutex_unlock(&m->lock);
        return all;
}

bool seat_image_in_use(SeatManager *m, const char *image) {
        bool used = false;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++)
                used = used || !strcmp(m->seats[i]->rec.image, image);
        pthread_mutex_unlock(&m->lock);
        return used;
}

/* ---- small steps ---- */

static void random_hex(char *out, size_t bytes) {
        uint8_t buf[64];
        randombytes_buf(buf, bytes);
        (void) digest_to_hex(buf, bytes, out, bytes * 2 + 1);
        sodium_memzero(buf, sizeof(buf));
}

static int token_hash_hex(const char *token, char out[65]) {
        uint8_t h[32];
        if (crypto_generichash(h, sizeof(h), (const uint8_t *) token, strlen(token), NULL, 0) < 0)
                return -EIO;
        return digest_to_hex(h, sizeof(h), out, 65);
}

int seat_authorize(Seat *s, const char *token, bool operator, SeatTicket *ret) {
        SeatTicket t = { .operator = operator };
        bool ok = operator;
        if (!operator && (!token || strlen(token) != SEAT_TOKEN_HEX || token_hash_hex(token, t.token_hash) < 0))
                return -EPERM;
        pthread_mutex_lock(&s->ticket_lock);
        t.generation = s->rec.generation;
        if (!operator)
                ok = sodium_memcmp(t.token_hash, s->rec.token_hash, 64) == 0;
        pthread_mutex_unlock(&s->ticket_lock);
        if (!ok)
                return -EPERM;
        *ret = t;
        return 0;
}

/* Under s->lock: is the ticket still for this session? */
static int ticket_check(Seat *s, const SeatTicket *t, SeatError **ret_error) {
        if (t->generation != s->rec.generation)
                return seat_error_set(ret_error, t->operator ? EBUSY : EPERM,
                                      "seat '%s' was reset after this request was authorised (for session %" PRId64
                                      ", now %" PRId64 "): it was not run",
                                      s->rec.id, t->generation, s->rec.generation);
        if (!t->operator && sodium_memcmp(t->token_hash, s->rec.token_hash, 64) != 0)
                return seat_error_set(ret_error, EPERM,
                                      "the token of this request no longer opens seat '%s' (it was handed a new one): it was not run",
                                      s->rec.id);
        return 0;
}

/* A new token for the seat (and, with next_generation, its next session), both changed at
 * once for seat_authorize(). */
static int new_token(Seat *s, bool next_generation, char **ret) {
        char h[65];
        char *t = malloc(SEAT_TOKEN_HEX + 1);
        if (!t)
                return -ENOMEM;
        random_hex(t, SEAT_TOKEN_HEX / 2);
        int r = token_hash_hex(t, h);
        if (r < 0) {
                sodium_memzero(t, SEAT_TOKEN_HEX);
                free(t);
                return r;
        }
        pthread_mutex_lock(&s->ticket_lock);
        memcpy(s->rec.token_hash, h, sizeof(h));
        if (next_generation)
                s->rec.generation++;
        pthread_mutex_unlock(&s->ticket_lock);
        *ret = t;
        return 0;
}

static bool participant_valid(const char *p) {
        size_t n = strlen(p);
        return n <= PARTICIPANT_MAX &&
               strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+- ") == n;
}

/* Under s->lock (or before s is shared): the paths of the seat's current generation. */
static int seat_paths(SeatManager *m, Seat *s) {
        _cleanup_free_ char *dir = NULL, *overlay = NULL, *console_log = NULL;
        if (asprintf(&dir, "%s/%s", m->seats_dir, s->rec.id) < 0 ||
            asprintf(&overlay, "%s/overlay-g%" PRId64 ".qcow2", dir, s->rec.generation) < 0 ||
            asprintf(&console_log, "%s/console-g%" PRId64 ".log", dir, s->rec.generation) < 0)
                return -ENOMEM;
        /* Swapped under the manager's lock: other seats' disk admission reads s->overlay. */
        pthread_mutex_lock(&m->lock);
        char *old_dir = s->dir, *old_overlay = s->overlay, *old_console_log = s->console_log;
        s->dir = TAKE_PTR(dir);
        s->overlay = TAKE_PTR(overlay);
        s->console_log = TAKE_PTR(console_log);
        pthread_mutex_unlock(&m->lock);
        dir = old_dir;
        overlay = old_overlay;
        console_log = old_console_log;
        return 0; /* the old paths are freed on the way out */
}

/* A reference to libvirt's connection (drop it with virConnectClose()). A restarted libvirtd
 * leaves seatd with a dead connection: probe it and open a new one. */
static virConnectPtr manager_conn(SeatManager *m, SeatError **ret_error) {
        unsigned long v;
        pthread_mutex_lock(&m->conn_lock);
        if (m->conn && (virConnectIsAlive(m->conn) != 1 || virConnectGetLibVersion(m->conn, &v) < 0)) {
                log_warning("the connection to libvirt broke (%s): reconnecting", domain_last_error());
                virConnectClose(m->conn);
                m->conn = NULL;
        }
        if (!m->conn && domain_open(m->config->libvirt_uri, &m->conn, ret_error) >= 0)
                log_notice("reconnected to libvirt at '%s'", m->config->libvirt_uri);
        virConnectPtr c = m->conn;
        if (c)
                virConnectRef(c);
        pthread_mutex_unlock(&m->conn_lock);
        return c;
}

/* A seat slot's two machine identities: g1 runs the odd generations, g2 the even ones. A
 * reset starts the new machine while libvirt is still finishing the old one's destroy
 * (1-2 s here), under the other name; and a saved state restores only under the name (and
 * UUID) it was saved with, so each identity keeps its own. */
static int seat_identity(int64_t generation) {
        return generation % 2 ? 0 : 1;
}

static void identity_domain_name(const char *id, int k, char *buf, size_t size) {
        snprintf(buf, size, SEAT_DOMAIN_PREFIX "%s-g%d", id, k + 1);
}

static void seat_domain_name(const SeatRecord *rec, char *buf, size_t size) {
        identity_domain_name(rec->id, seat_identity(rec->generation), buf, size);
}

/* ---- QEMU uids: each seat machine's QEMU runs as a uid of its own (issue 13 #8) ---- */

static int uid_table_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
        uid_t first = 0, last = 0;
        if (seat_config_parse_uid_range(config->qemu_uid_range, &first, &last) < 0)
                return seat_error_set(ret_error, EINVAL, "invalid qemu_uid_range '%s'", config->qemu_uid_range);
        m->uid_first = first + 1; /* the first is the host check's probe guest */
        m->n_uid_slots = (size_t) (last - first) / 2;
        m->uid_slot_used = calloc(m->n_uid_slots, sizeof(bool));
        return m->uid_slot_used ? 0 : -ENOMEM;
}

/* The uid identity k of the seat's slot runs as: the participant's machine and the standby
 * state made beside it (the other identity) never share one, so even the slot's own live
 * QEMU cannot reach the state its next session restores. */
static uid_t identity_uid(const SeatRecord *rec, int k) {
        return (uid_t) rec->qemu_uid + (uid_t) k;
}

/* The slot of the table a uid falls in, or -1 outside the range. */
static long uid_slot_of(const SeatManager *m, int64_t uid) {
        if (uid < (int64_t) m->uid_first)
                return -1;
        uint64_t i = (uint64_t) (uid - (int64_t) m->uid_first) / 2;
        return i < m->n_uid_slots ? (long) i : -1;
}

/* A free pair for the seat, held until it is freed (release, or a failed provision). */
static int seat_uid_take(SeatManager *m, Seat *s, SeatError **ret_error) {
        if (s->uid_slot[0] >= 0)
                return 0;
        pthread_mutex_lock(&m->lock);
        size_t i = 0;
        while (i < m->n_uid_slots && m->uid_slot_used[i])
                i++;
        if (i < m->n_uid_slots)
                m->uid_slot_used[i] = true;
        pthread_mutex_unlock(&m->lock);
        if (i == m->n_uid_slots)
                return seat_error_set(ret_error, EUSERS,
                                      "no free QEMU uid pair in qemu_uid_range '%s' (room for %zu seats): release a seat or widen the range",
                                      m->config->qemu_uid_range, m->n_uid_slots);
        s->uid_slot[0] = (long) i;
        s->rec.qemu_uid = (int64_t) m->uid_first + 2 * (int64_t) i;
        return 0;
}

/* An adopted seat's recorded uids, which its running QEMU has: taken in the table, or
 * -EBUSY when another seat holds them (two seats on one uid is what this prevents). A
 * pair outside the range (it was changed since) cannot collide with one handed out now. */
static int seat_uid_adopt(SeatManager *m, Seat *s) {
        long a = uid_slot_of(m, s->rec.qemu_uid), b = uid_slot_of(m, s->rec.qemu_uid + 1);
        int r = 0;
        if (b == a)
                b = -1;
        pthread_mutex_lock(&m->lock);
        if ((a >= 0 && m->uid_slot_used[a]) || (b >= 0 && m->uid_slot_used[b]))
                r = -EBUSY;
        else {
                if (a >= 0)
                        m->uid_slot_used[a] = true;
                if (b >= 0)
                        m->uid_slot_used[b] = true;
                s->uid_slot[0] = a;
                s->uid_slot[1] = b;
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

static void seat_uid_release(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->lock);
        for (int k = 0; k < 2; k++)
                if (s->uid_slot[k] >= 0 && (size_t) s->uid_slot[k] < m->n_uid_slots)
                        m->uid_slot_used[s->uid_slot[k]] = false;
        pthread_mutex_unlock(&m->lock);
        s->uid_slot[0] = s->uid_slot[1] = -1;
}

/* Make s->dom a handle on the live connection (it may date from before a reconnect). */
static int seat_refresh_dom(SeatManager *m, Seat *s, SeatError **ret_error) {
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        if (s->dom && virDomainGetConnect(s->dom) != c) {
                char name[64];
                seat_domain_name(&s->rec, name, sizeof(name));
                virDomainFree(s->dom);
                s->dom = virDomainLookupByName(c, name); /* NULL: gone meanwhile */
        }
        virConnectClose(c);
        return 0;
}

int seat_manager_accel(SeatManager *m, bool *ret_kvm, SeatError **ret_error) {
        const SeatConfig *c = m->config;
        if (c->accel == SEAT_ACCEL_KVM) {
                *ret_kvm = true;
                return 0;
        }
        if (c->accel == SEAT_ACCEL_AUTO) {
                /* What the last 'seatctl host check' proved with a probe guest. */
                _cleanup_free_ char *mark = NULL, *v = NULL;
                if (asprintf(&mark, "%s/kvm-usable", c->state_dir) >= 0 && read_file_capped(mark, 16, &v, NULL) >= 0 &&
                    v[0] == '1') {
                        *ret_kvm = true;
                        return 0;
                }
        }
        if (!c->allow_tcg)
                return seat_error_set(ret_error, EPERM,
                                      c->accel == SEAT_ACCEL_TCG
                                              ? "accel = tcg but allow_tcg = false: seatd refuses software emulation unless the config allows it"
                                              : "KVM has not been proven usable here (run 'seatctl host check'); set accel = kvm once it is, or allow_tcg = true to run seats under software emulation");
        *ret_kvm = false;
        return 0;
}

static void set_live_domain(SeatManager *m, Seat *s, const char *name) {
        pthread_mutex_lock(&m->lock);
        (void) snprintf(s->live_domain, sizeof(s->live_domain), "%s", name);
        pthread_mutex_unlock(&m->lock);
}

/* ---- disk admission ---- */

static uint64_t file_allocated(const char *path) {
        struct stat st;
        return path && stat(path, &st) >= 0 ? (uint64_t) st.st_blocks * 512u : 0;
}

/* What the running seats may still write: each overlay can grow to its disk's virtual
 * size. Under the manager's lock. */
static uint64_t disk_promised_locked(SeatManager *m, const Seat *except) {
        uint64_t sum = m->disk_pending;
        for (size_t i = 0; i < m->n_seats; i++) {
                const Seat *o = m->seats[i];
                if (o == except || !o->disk_virtual)
                        continue;
                uint64_t used = file_allocated(o->overlay);
                sum += used < o->disk_virtual ? o->disk_virtual - used : 0;
        }
        return sum;
}

/* A seat boots only when its whole disk fits beside everything promised to the others and
 * the reserve: a guest that fills its disk cannot take the host's free space. */
static int disk_admit(SeatManager *m, Seat *s, uint64_t need, SeatError **ret_error) {
        struct statvfs sv;
        if (statvfs(m->seats_dir, &sv) < 0)
                return seat_error_set(ret_error, errno, "free space of '%s': %m", m->seats_dir);
        uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize, reserve = m->config->disk_reserve_bytes;
        pthread_mutex_lock(&m->lock);
        uint64_t promised = disk_promised_locked(m, s);
        bool fits = avail >= reserve && avail - reserve >= promised && avail - reserve - promised >= need;
        if (fits)
                m->disk_pending += need;
        pthread_mutex_unlock(&m->lock);
        if (!fits)
                return seat_error_set(ret_error, ENOSPC,
                                      "not enough disk space for seat '%s': %" PRIu64 " MiB free in '%s', %" PRIu64
                                      " MiB promised to running seats, %" PRIu64 " MiB needed, %" PRIu64
                                      " MiB kept in reserve (disk_reserve_bytes): free space or release seats",
                                      s->rec.id, avail >> 20, m->seats_dir, promised >> 20, need >> 20, reserve >> 20);
        return 0;
}

/* The whole virtual disk of the image, admitted before either boot path writes an overlay
 * (a restored one grows to the same size). Counted twice until the boot settles. */
static int disk_admit_image(SeatManager *m, Seat *s, const ImageManifest *man, SeatError **ret_error) {
        uint64_t vsize = 0;
        const ImageFile *disk = NULL;
        _cleanup_free_ char *base = NULL;
        for (size_t i = 0; i < man->n_files && !disk; i++)
                if (man->files[i].role == IMAGE_ROLE_DISK)
                        disk = &man->files[i];
        if (!disk || !(base = image_store_blob_path(m->store, disk)))
                return seat_error_set(ret_error, ENOENT, "image '%s' has no disk", man->name);
        int r = image_disk_virtual_size(disk->format, base, &vsize);
        if (r < 0)
                return seat_error_set(ret_error, -r, "the disk of image '%s': %s", man->name, strerror(-r));
        r = disk_admit(m, s, vsize, ret_error);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        s->disk_pending = vsize;
        s->disk_virtual = vsize;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

/* The boot is over (the seat is in the table, or gone): its overlay speaks for itself. */
static void disk_settle(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->lock);
        m->disk_pending -= MIN(s->disk_pending, m->disk_pending);
        s->disk_pending = 0;
        pthread_mutex_unlock(&m->lock);
}

/* The verified blobs a domain of this image boots from. */
typedef struct SpecFiles {
        char *kernel, *initrd, *base;
        const ImageFile *disk;
} SpecFiles;

static void spec_files_done(SpecFiles *f) {
        free(f->kernel);
        free(f->initrd);
        free(f->base);
}

static int spec_files(SeatManager *m, const ImageManifest *man, SpecFiles *f) {
        *f = (SpecFiles) {};
        for (size_t i = 0; i < man->n_files && !f->disk; i++)
                if (man->files[i].role == IMAGE_ROLE_DISK)
                        f->disk = &man->files[i];
        if (man->kernel && !(f->kernel = image_store_blob_path(m->store, image_manifest_find_file(man, man->kernel))))
                return -ENOMEM;
        if (man->initrd && !(f->initrd = image_store_blob_path(m->store, image_manifest_find_file(man, man->initrd))))
                return -ENOMEM;
        if (!f->disk || !(f->base = image_store_blob_path(m->store, f->disk)))
                return -ENOMEM;
        return 0;
}

/* A new domain on a new overlay of the verified base (cold boot), with iface as its NIC. */
static int start_fresh(SeatManager *m, const ImageManifest *man, bool kvm, const char *name, const char *overlay,
                       const char *console_log, const SeatRecord *rec, const char *iface, uid_t uid, virDomainPtr *ret,
                       SeatError **ret_error) {
        _cleanup_(spec_files_done) SpecFiles f = {};
        _cleanup_(domain_boot_copies_done) DomainBootCopies boot = {};
        int r = spec_files(m, man, &f);
        if (r < 0)
                return r;
        r = overlay_create(f.base, image_format_to_string(f.disk->format), overlay, ret_error);
        if (r >= 0)
                r = overlay_give(overlay, uid, ret_error);
        if (r >= 0)
                r = domain_boot_copies(f.kernel, f.initrd, overlay, &boot, ret_error);
        if (r < 0)
                return r;
        DomainSpec spec = { .name = name, .kvm = kvm, .manifest = man, .kernel = boot.kernel, .initrd = boot.initrd,
                            .base = f.base, .overlay = overlay, .console_log = console_log, .record = rec,
                            .interface_xml = iface, .qemu_uid = uid };
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        r = domain_create(c, &spec, ret, ret_error);
        virConnectClose(c);
        return r;
}

static int build_spec_and_start(SeatManager *m, Seat *s, const ImageManifest *man, bool kvm, SeatError **ret_error) {
        _cleanup_free_ char *iface = NULL;
        char name[64];
        if (s->net && seatnet_interface_xml(s->net, &iface) < 0)
                return -ENOMEM;
        seat_domain_name(&s->rec, name, sizeof(name));
        return start_fresh(m, man, kvm, name, s->overlay, s->console_log, &s->rec, iface,
                           identity_uid(&s->rec, seat_identity(s->rec.generation)), &s->dom, ret_error);
}

/* The host end of the agent channel (libvirt's socket for it). */
static int open_agent(Seat *s, int timeout_ms, SeatError **ret_error) {
        _cleanup_free_ char *sock = NULL;
        int r = domain_agent_socket(s->dom, &sock);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s' has no agent channel", s->rec.id);
        s->agent = agent_client_free(s->agent);
        return agent_client_connect_unix(sock, timeout_ms, &s->agent, ret_error);
}

/* The first hello names the image: an agent that breaks the protocol (or never answers)
 * is the image's doing, and the operator must know which image to pull. */
static int hello_failed(const char *kind, const char *name, const char *image, int64_t version, SeatError **ret_error) {
        return seat_error_wrap(ret_error, "%s '%s': guest-init of image '%s' version %" PRId64 " did not come up", kind, name,
                               image, version);
}

/* fresh: the machine has just booted or been restored, so anything but the hello reply
 * proves its agent broken at once (agent_client_hello_fresh); otherwise seatd reconnects to
 * a running agent whose channel may still hold the previous connection's frames. */
static int greet_agent(Seat *s, bool fresh, int timeout_ms, SeatError **ret_error) {
        _cleanup_agent_msg_ AgentMsg *hello = NULL;
        int r = fresh ? agent_client_hello_fresh(s->agent, timeout_ms, &hello, ret_error)
                      : agent_client_hello(s->agent, timeout_ms, &hello, ret_error);
        if (r < 0)
                return hello_failed("seat", s->rec.id, s->rec.image, s->rec.image_version, ret_error);
        return 0;
}

static int connect_agent(Seat *s, bool fresh, int timeout_ms, SeatError **ret_error) {
        int r = open_agent(s, timeout_ms, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s': guest-init did not come up", s->rec.id);
        return greet_agent(s, fresh, timeout_ms, ret_error);
}

/* A new identity for whoever sits down next: hostname, machine id, fresh RNG entropy,
 * and the host's clock (a restored machine's is behind by its saved state's age). */
static int configure_identity(Seat *s, SeatError **ret_error) {
        char hostname[64], machine_id[33];
        uint8_t entropy[64];
        AgentAddress addr;
        struct timespec now;
        snprintf(hostname, sizeof(hostname), "seat-%s", s->rec.id);
        random_hex(machine_id, 16);
        randombytes_buf(entropy, sizeof(entropy));
        (void) clock_gettime(CLOCK_REALTIME, &now);
        AgentMsg req = { .type = AGENT_MSG_CONFIGURE,
                         .configure = { .hostname = hostname, .seat_id = s->rec.id, .machine_id = machine_id,
                                        .entropy = entropy, .entropy_len = sizeof(entropy), .has_time = true,
                                        .time_sec = now.tv_sec, .time_nsec = now.tv_nsec } };
        if (s->net) {
                seatnet_guest_address(s->net, &addr);
                req.configure.addresses = &addr;
                req.configure.n_addresses = 1;
        }
        int r = agent_client_call(s->agent, &req, AGENT_CALL_TIMEOUT_MS, NULL, ret_error);
        sodium_memzero(entropy, sizeof(entropy));
        return r < 0 ? seat_error_wrap(ret_error, "configure seat '%s'", s->rec.id) : 0;
}

static int audit_paths(const Seat *s, char **ret_log, char **ret_key);

/* ---- the seat's network ---- */

bool seat_egress_name_valid(const char *name) {
        return seatnet_profile_name_valid(name);
}

static char *egress_saved_path(const Seat *s) {
        char *p = NULL;
        return asprintf(&p, "%s/egress.profile", s->dir) < 0 ? NULL : p;
}

/* The network before the machine: a seat whose filter cannot be installed and read back
 * does not boot. Its profile is kept beside it so a restarted seatd restores the same. */
static int seat_net_up(SeatManager *m, Seat *s, const char *egress, SeatError **ret_error) {
        _cleanup_free_ char *saved_path = NULL;
        SeatNet *n = NULL;
        if (!m->config->network)
                return 0;
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        int r = seatnet_up(m->net, c, s->rec.id, egress, -1, NULL, &n, ret_error);
        virConnectClose(c);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        s->net = n;
        pthread_mutex_unlock(&m->lock);
        s->rec.net_index = seatnet_index(n);
        (void) snprintf(s->rec.egress, sizeof(s->rec.egress), "%s", seatnet_profile_name(n));
        const char *text = seatnet_profile_text(n);
        if (!(saved_path = egress_saved_path(s)))
                return -ENOMEM;
        r = write_file_atomic(saved_path, text, strlen(text), 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "save the egress profile of seat '%s': %s", s->rec.id, strerror(-r));
        return 0;
}

static void seat_net_down(SeatManager *m, Seat *s) {
        _cleanup_free_ char *saved_path = s->dir ? egress_saved_path(s) : NULL;
        pthread_mutex_lock(&m->lock);
        SeatNet *n = TAKE_PTR(s->net);
        pthread_mutex_unlock(&m->lock);
        if (n) {
                virConnectPtr c = manager_conn(m, NULL);
                seatnet_down(m->net, c, n);
                if (c)
                        virConnectClose(c);
        }
        if (saved_path)
                (void) unlink(saved_path);
        __atomic_store_n(&s->net_paused, false, __ATOMIC_RELEASE);
}

/* Undo what a failed provision made: domain, overlay, console log, audit log, directory. */
static void seat_teardown(Seat *s) {
        s->agent = agent_client_free(s->agent);
        if (s->dom) {
                (void) domain_stop(s->dom);
                virDomainFree(s->dom);
                s->dom = NULL;
        }
        if (s->overlay)
                (void) unlink(s->overlay);
        if (s->console_log)
                (void) unlink(s->console_log);
        s->audit = audit_log_free(s->audit);
        _cleanup_free_ char *al = NULL, *ak = NULL;
        if (s->dir && audit_paths(s, &al, &ak) >= 0) {
                (void) unlink(al);
                (void) unlink(ak);
        }
        seat_net_down(s->m, s);
        if (s->dir)
                (void) rmdir(s->dir);
}

/* Set the session's files aside for evidence (sealed by the evidence work). */
static int audit_paths(const Seat *s, char **ret_log, char **ret_key) {
        if (asprintf(ret_log, "%s/audit-g%" PRId64 ".log", s->dir, s->rec.generation) < 0)
                return -ENOMEM;
        if (asprintf(ret_key, "%s/audit-g%" PRId64 ".key", s->dir, s->rec.generation) < 0) {
                free(*ret_log);
                return -ENOMEM;
        }
        return 0;
}

/* Audit segments of this generation written before a seatd restart ("audit-gN-pre-T.log"
 * and their keys) go to the quarantine as "audit-pre-T.log" / ".key". */
static void move_pre_restart_segments(Seat *s, const char *q) {
        char prefix[48];
        snprintf(prefix, sizeof(prefix), "audit-g%" PRId64 "-pre-", s->rec.generation);
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
                        continue;
                _cleanup_free_ char *from = NULL, *to = NULL;
                if (asprintf(&from, "%s/%s", s->dir, de->d_name) >= 0 &&
                    asprintf(&to, "%s/audit-pre-%s", q, de->d_name + strlen(prefix)) >= 0)
                        (void) rename(from, to);
        }
        if (d)
                closedir(d);
}

/* What the image of this session names for evidence. An adopted seat learns it from the
 * store, if the image there is still the version the session runs. */
static int remember_evidence_paths(Seat *s, const ImageManifest *man) {
        strv_free(s->evidence_paths);
        free(s->evidence_fs);
        s->evidence_paths = NULL;
        s->evidence_fs = NULL;
        size_t n = 0;
        while (man->evidence_paths && man->evidence_paths[n])
                n++;
        s->evidence_paths = calloc(n + 1, sizeof(char *));
        if (!s->evidence_paths)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(s->evidence_paths[i] = strdup(man->evidence_paths[i])))
                        return -ENOMEM;
        if (man->guest_init_filesystem && !(s->evidence_fs = strdup(man->guest_init_filesystem)))
                return -ENOMEM;
        return 0;
}

static int write_session_info(SeatManager *m, Seat *s, const char *q, SeatError **ret_error) {
        if (!s->evidence_paths) {
                _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
                char digest[2 * SEAT_HASH_BYTES + 1] = "";
                if (image_store_get(m->store, s->rec.image, &man, NULL) >= 0)
                        (void) digest_to_hex(man->digest, SEAT_HASH_BYTES, digest, sizeof(digest));
                if (man && !strcmp(digest, s->rec.image_digest))
                        (void) remember_evidence_paths(s, man);
                else
                        log_seat_warning(s->rec.id,
                                         "seat '%s': the image version of this session is not in the store any more: its guest files are not taken for evidence",
                                         s->rec.id);
        }
        SealSessionInfo info = { .seat_id = s->rec.id, .generation = s->rec.generation, .image = s->rec.image,
                                 .image_digest = s->rec.image_digest, .filesystem = s->evidence_fs,
                                 .evidence_paths = s->evidence_paths };
        return seal_write_session_info(q, &info, ret_error);
}

static int quarantine(SeatManager *m, Seat *s, char **ret_dir, SeatError **ret_error) {
        _cleanup_free_ char *q = NULL, *o = NULL, *c = NULL, *al = NULL, *ak = NULL, *qal = NULL, *qak = NULL;
        if (asprintf(&q, "%s/%s-g%" PRId64 "-%lld", m->quarantine_dir, s->rec.id, s->rec.generation,
                     (long long) time(NULL)) < 0 ||
            asprintf(&o, "%s/overlay.qcow2", q) < 0 || asprintf(&c, "%s/console.log", q) < 0 ||
            asprintf(&qal, "%s/audit.log", q) < 0 || asprintf(&qak, "%s/audit.key", q) < 0 || audit_paths(s, &al, &ak) < 0)
                return -ENOMEM;
        if (mkdir(q, 0700) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create quarantine '%s': %m", q);
        if (rename(s->overlay, o) < 0 && errno != ENOENT)
                return seat_error_set(ret_error, errno, "set aside the overlay of seat '%s': %m", s->rec.id);
        /* Evidence is root's: the slot's QEMU uid pair goes to another seat after release. */
        if (chown(o, 0, 0) < 0 && errno != ENOENT)
                return seat_error_set(ret_error, errno, "take back the overlay of seat '%s': %m", s->rec.id);
        if (rename(s->console_log, c) < 0 && errno != ENOENT)
                return seat_error_set(ret_error, errno, "set aside the console log of seat '%s': %m", s->rec.id);
        /* What virtlogd rotated out of it (console-gN.log.0, .1, ...: it keeps a few). */
        for (int k = 0; k < 10; k++) {
                _cleanup_free_ char *from = NULL, *to = NULL;
                if (asprintf(&from, "%s.%d", s->console_log, k) >= 0 && asprintf(&to, "%s.%d", c, k) >= 0 &&
                    rename(from, to) < 0 && errno != ENOENT)
                        log_seat_warning(s->rec.id, "seat '%s': cannot set aside '%s': %m", s->rec.id, from);
        }
        if ((rename(al, qal) < 0 && errno != ENOENT) || (rename(ak, qak) < 0 && errno != ENOENT))
                return seat_error_set(ret_error, errno, "set aside the audit log of seat '%s': %m", s->rec.id);
        move_pre_restart_segments(s, q);
        int r = write_session_info(m, s, q, ret_error);
        if (r < 0)
                return r;
        if (ret_dir)
                *ret_dir = TAKE_PTR(q);
        return 0;
}

/* ---- the session's audit log and its evidence ---- */

/* A new audit log per session. Its first key is sealed to the facilitator at once and
 * wiped: seatd keeps only the evolving key, so a later compromise cannot rewrite what
 * was recorded (without a facilitator key it is kept, 0600, and seatd says so). */
static int session_open(SeatManager *m, Seat *s, SeatError **ret_error) {
        _cleanup_free_ char *log_path = NULL, *key_path = NULL;
        uint8_t key[AUDIT_KEY_BYTES];
        int r = audit_paths(s, &log_path, &key_path);
        if (r < 0)
                return r;
        audit_key_generate(key);
        if (m->have_facilitator) {
                uint8_t sealed[ARCHIVE_SEALED_AUDIT_KEY_BYTES];
                r = archive_seal_audit_key(&m->facilitator, key, sealed);
                if (r >= 0)
                        r = write_file_atomic(key_path, sealed, sizeof(sealed), 0600);
        } else {
                char hex[2 * AUDIT_KEY_BYTES + 2];
                (void) digest_to_hex(key, AUDIT_KEY_BYTES, hex, sizeof(hex) - 1);
                strcat(hex, "\n");
                r = write_file_atomic(key_path, hex, strlen(hex), 0600);
                sodium_memzero(hex, sizeof(hex));
        }
        AuditLog *log = NULL;
        if (r >= 0)
                r = audit_log_open(log_path, key, 0, &log, ret_error);
        sodium_memzero(key, sizeof(key));
        if (r >= 0) {
                pthread_mutex_lock(&s->audit_lock);
                s->audit = log;
                pthread_mutex_unlock(&s->audit_lock);
        }
        if (r < 0)
                return seat_error_set(ret_error, -r, "open the audit log of seat '%s': %s", s->rec.id, strerror(-r));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seat", json_object_new_string(s->rec.id));
        json_object_object_add(o, "generation", json_object_new_int64(s->rec.generation));
        json_object_object_add(o, "image", json_object_new_string(s->rec.image));
        json_object_object_add(o, "image_version", json_object_new_int64(s->rec.image_version));
        json_object_object_add(o, "image_digest", json_object_new_string(s->rec.image_digest));
        json_object_object_add(o, "participant", json_object_new_string(s->rec.participant));
        if (s->net) {
                json_object_object_add(o, "egress", json_object_new_string(seatnet_profile_name(s->net)));
                json_object_object_add(o, "egress_profile", json_object_new_string(seatnet_profile_text(s->net)));
        }
        pthread_mutex_lock(&s->audit_lock);
        r = audit_log_append(s->audit, "session", o, ret_error);
        pthread_mutex_unlock(&s->audit_lock);
        json_object_put(o);
        return r;
}

static void session_close(Seat *s) {
        _cleanup_error_ SeatError *err = NULL;
        uint64_t denied = s->net ? seatnet_denied_delta(s->m->net, s->net) : 0;
        pthread_mutex_lock(&s->audit_lock);
        if (s->audit && denied > 0) {
                json_object *o = json_object_new_object();
                json_object_object_add(o, "packets", json_object_new_int64((int64_t) denied));
                (void) audit_log_append(s->audit, "egress.denied", o, NULL);
                json_object_put(o);
        }
        if (s->audit && audit_log_close(s->audit, &err) < 0)
                log_seat_warning(s->rec.id, "closing the audit log of seat '%s': %s", s->rec.id,
                                 err ? err->message : "?");
        s->audit = NULL;
        pthread_mutex_unlock(&s->audit_lock);
}

int seat_audit(Seat *s, const char *type, json_object *data) {
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_json_ json_object *empty = data ? NULL : json_object_new_object();
        int r = 0;
        pthread_mutex_lock(&s->audit_lock);
        if (s->audit && (r = audit_log_append(s->audit, type, data ? data : empty, &err)) < 0)
                log_seat_error(s->rec.id, "seat '%s': cannot append to the audit log: %s", s->rec.id,
                               err ? err->message : "?");
        pthread_mutex_unlock(&s->audit_lock);
        return r;
}

typedef struct SealJob {
        SeatManager *m;
        Seat *s;                  /* a reference, or NULL for a released seat */
        char *dir, *seat_id;
} SealJob;

/* A seal's output is admitted like a seat's disk (disk_admit): beside what running seats
 * were promised and the reserve, and promised itself until the seal is over. */
static int seal_admit(void *userdata, const char *seat_id, uint64_t need, SeatError **ret_error) {
        SeatManager *m = userdata;
        struct statvfs sv;
        if (statvfs(m->quarantine_dir, &sv) < 0)
                return seat_error_set(ret_error, errno, "free space of '%s': %m", m->quarantine_dir);
        uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize, reserve = m->config->disk_reserve_bytes;
        pthread_mutex_lock(&m->lock);
        uint64_t promised = disk_promised_locked(m, NULL);
        bool fits = avail >= reserve && avail - reserve >= promised && avail - reserve - promised >= need;
        if (fits)
                m->disk_pending += need;
        pthread_mutex_unlock(&m->lock);
        if (!fits)
                return seat_error_set(ret_error, ENOSPC,
                                      "disk full for sealing the session of seat '%s': %" PRIu64 " MiB free in '%s', %" PRIu64
                                      " MiB promised to running seats and other seals, %" PRIu64 " MiB needed (evidence caps), %" PRIu64
                                      " MiB kept in reserve (disk_reserve_bytes): free space, then 'seatctl evidence retry'",
                                      seat_id, avail >> 20, m->quarantine_dir, promised >> 20, need >> 20, reserve >> 20);
        return 0;
}

static void seal_settle(void *userdata, uint64_t need) {
        SeatManager *m = userdata;
        pthread_mutex_lock(&m->lock);
        m->disk_pending -= MIN(need, m->disk_pending);
        pthread_mutex_unlock(&m->lock);
}

static SealContext seal_context(SeatManager *m) {
        return (SealContext) { .config = m->config, .archives_dir = m->archives_dir, .host_key = m->host_key,
                               .facilitator = &m->facilitator, .admit = seal_admit, .settle = seal_settle,
                               .userdata = m };
}

static void seal_job_free(SealJob *j) {
        if (j->s)
                seat_unref(j->s);
        free(j->dir);
        free(j->seat_id);
        free(j);
}

/* Sealing failed: the seat goes FAULTED and is not reset before an operator has the
 * evidence stored (seatctl evidence retry). */
static void seat_fault(Seat *s, const char *why);
static void seat_seal_failed(Seat *s, const char *dir, const char *why) {
        _cleanup_free_ char *fault = NULL;
        pthread_mutex_lock(&s->lock);
        free(s->seal_fault);
        s->seal_fault = strdup(why);
        if (seat_state(s) != SEAT_RELEASED &&
            asprintf(&fault, "the evidence of an earlier session is not sealed (kept in '%s'): %s", dir, why) >= 0)
                seat_fault(s, fault);
        seat_view_publish(s);
        pthread_mutex_unlock(&s->lock);
}

/* Reset never waits for evidence: the session is sealed here, beside the next one, and
 * its quarantine deleted only once the archive is written and fsync'ed. */
static void *seal_thread(void *p) {
        SealJob *j = p;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *archive = NULL;
        SealContext ctx = seal_context(j->m);
        int r = seal_session_dir(&ctx, j->seat_id, j->dir, &archive, &err);
        if (r >= 0)
                log_seat_notice(j->seat_id, "sealed a session of seat '%s' into '%s'", j->seat_id, archive);
        else if (r != -EBUSY) {
                const char *why = err ? err->message : strerror(-r);
                log_seat_error(j->seat_id, "cannot seal the session of seat '%s' (kept in '%s'): %s", j->seat_id,
                               j->dir, why);
                if (j->s)
                        seat_seal_failed(j->s, j->dir, why);
        }
        seal_job_free(j);
        return NULL;
}

/* s (may be NULL): the seat to fault if sealing fails; its lock is held by the caller, or
 * it is not shared yet. dir is consumed. */
static void seal_dir_in_background(SeatManager *m, Seat *s, const char *seat_id, char *dir) {
        if (!m->have_facilitator) {
                log_seat_warning(seat_id,
                                 "the session of seat '%s' stays unsealed in '%s': set facilitator_key in seatd.conf",
                                 seat_id, dir);
                free(dir);
                return;
        }
        SealJob *j = calloc(1, sizeof(*j));
        pthread_t t;
        if (!j || !(j->seat_id = strdup(seat_id))) {
                free(dir);
                if (j)
                        seal_job_free(j);
                return;
        }
        j->m = m;
        j->dir = dir;
        if (s) {
                pthread_mutex_lock(&m->lock);
                s->refs++;
                pthread_mutex_unlock(&m->lock);
                j->s = s;
        }
        if (pthread_create(&t, NULL, seal_thread, j) != 0) {
                log_seat_error(seat_id, "cannot start sealing the session of seat '%s': it stays in '%s'", seat_id,
                               j->dir);
                if (s) { /* the caller holds s->lock, or s is not shared yet */
                        free(s->seal_fault);
                        s->seal_fault = strdup("seatd could not start a thread to seal it: seatctl evidence retry");
                        seat_view_publish(s);
                }
                seal_job_free(j);
                return;
        }
        pthread_detach(t);
}

static void seal_in_background(SeatManager *m, Seat *s, bool keep_ref, char *dir) {
        seal_dir_in_background(m, keep_ref ? s : NULL, s->rec.id, dir);
}

/* ---- warm reset: saved states per slot identity ---- */

typedef struct WarmPaths {
        char *dir, *save, *overlay, *meta, *save_tmp, *overlay_tmp, *console;
} WarmPaths;

static void warm_paths_done(WarmPaths *p) {
        free(p->dir);
        free(p->save);
        free(p->overlay);
        free(p->meta);
        free(p->save_tmp);
        free(p->overlay_tmp);
        free(p->console);
}

static int warm_paths(SeatManager *m, const char *id, int k, WarmPaths *p) {
        *p = (WarmPaths) {};
        if (asprintf(&p->dir, "%s/%s", m->warm_dir, id) < 0 || asprintf(&p->save, "%s/g%d.save", p->dir, k + 1) < 0 ||
            asprintf(&p->overlay, "%s/g%d.qcow2", p->dir, k + 1) < 0 || asprintf(&p->meta, "%s/g%d.meta", p->dir, k + 1) < 0 ||
            asprintf(&p->save_tmp, "%s/g%d.save.tmp", p->dir, k + 1) < 0 ||
            asprintf(&p->overlay_tmp, "%s/g%d.qcow2.tmp", p->dir, k + 1) < 0 ||
            asprintf(&p->console, "%s/g%d.console.log", p->dir, k + 1) < 0) {
                warm_paths_done(p);
                return -ENOMEM;
        }
        return 0;
}

/* The sidecar first: without it the rest is never used. */
static void warm_remove(const WarmPaths *p) {
        (void) unlink(p->meta);
        (void) unlink(p->save);
        (void) unlink(p->overlay);
        (void) unlink(p->save_tmp);
        (void) unlink(p->overlay_tmp);
        (void) unlink(p->console);
}

static void warm_set_standby(Seat *s, const char *fmt, ...) _printf_(2, 3);
static void warm_set_standby(Seat *s, const char *fmt, ...) {
        char *t = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&t, fmt, ap) < 0)
                t = NULL;
        va_end(ap);
        pthread_mutex_lock(&s->warm_lock);
        free(s->warm_standby);
        s->warm_standby = t;
        pthread_mutex_unlock(&s->warm_lock);
}

static bool seen_matches(const WarmSeen *w, const struct stat *st) {
        return w->valid && w->dev == st->st_dev && w->ino == st->st_ino && w->size == st->st_size &&
               w->mtim.tv_sec == st->st_mtim.tv_sec && w->mtim.tv_nsec == st->st_mtim.tv_nsec &&
               w->ctim.tv_sec == st->st_ctim.tv_sec && w->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static void seen_record(WarmSeen *w, const struct stat *st, const char *hash) {
        *w = (WarmSeen) { .valid = true, .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
                          .mtim = st->st_mtim, .ctim = st->st_ctim };
        snprintf(w->hash, sizeof(w->hash), "%s", hash);
}

/* Whether identity k's saved state may be restored for this seat and image: the sidecar's
 * MAC and binding, and the save file's hash (not hashed again when it is the very file
 * hashed before, unless full). 0, -ENOENT (none), or refused with a reason in *ret_why. */
static int warm_check(SeatManager *m, Seat *s, int k, const char *image_digest, bool full, const WarmPaths *wp,
                      WarmMeta *ret, char **ret_why) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        char name[64], hash[SEAT_HASH_HEX_LEN + 1];
        const char *why = NULL;
        struct stat st;
        uint64_t size = 0;
        identity_domain_name(s->rec.id, k, name, sizeof(name));
        int r = read_file_capped(wp->meta, WARM_META_MAX, &text, &len);
        if (r == -ENOENT)
                return -ENOENT;
        if (r < 0)
                return asprintf(ret_why, "its sidecar '%s' cannot be read: %s", wp->meta, strerror(-r)) < 0 ? -ENOMEM : r;
        r = warm_meta_parse(text, len, m->warm_key, ret);
        if (r == -EKEYREJECTED)
                return asprintf(ret_why, "its sidecar's MAC is not this seatd's (a state from another host, or edited)") < 0
                               ? -ENOMEM : r;
        if (r < 0)
                return asprintf(ret_why, "its sidecar is damaged") < 0 ? -ENOMEM : r;
        r = warm_meta_matches(ret, s->rec.id, name, image_digest, &why);
        if (r < 0)
                return asprintf(ret_why, "%s", why) < 0 ? -ENOMEM : r;
        if (stat(wp->save, &st) < 0)
                return asprintf(ret_why, "its save file is missing: %m") < 0 ? -ENOMEM : -ENOENT;
        if (!full && seen_matches(&s->seen[k], &st) && !strcmp(s->seen[k].hash, ret->state_hash))
                return 0;
        s->seen[k].valid = false;
        r = warm_file_hash(wp->save, hash, &size);
        if (r < 0)
                return asprintf(ret_why, "its save file cannot be read: %s", strerror(-r)) < 0 ? -ENOMEM : r;
        if (size != ret->state_size || strcmp(hash, ret->state_hash) != 0)
                return asprintf(ret_why, "its save file does not match the hash made when it was saved (damaged or replaced)") < 0
                               ? -ENOMEM : -EBADMSG;
        seen_record(&s->seen[k], &st, hash);
        return 0;
}

/* Boot identity k from the verified image to agent-ready, before anyone is configured in
 * it, and save it (the domain stops): the slot's saved state for k. The host end of the
 * agent channel stays connected through the save and is closed only once the machine is
 * gone: a host that hangs up just before the save leaves the guest with that hang-up still
 * unseen (virtio-serial tells the guest through a control queue, behind its data), and a
 * restore would then deliver it after the next host's first bytes, ending that host's
 * session under it. Saved connected, nothing is pending; a restore connects before the
 * machine runs (warm_restore), and its hello starts the new session. */
static int warm_make(SeatManager *m, Seat *s, int k, const SeatRecord *rec, const ImageManifest *man,
                     const char *image_digest, const WarmPaths *wp, SeatError **ret_error) {
        char name[64], uuid[VIR_UUID_STRING_BUFLEN];
        bool kvm = false;
        virDomainPtr dom = NULL;
        _cleanup_free_ char *sock = NULL, *text = NULL;
        _cleanup_agent_client_ AgentClient *agent = NULL;
        _cleanup_agent_msg_ AgentMsg *hello = NULL;
        WarmMeta meta = {};
        size_t len = 0;
        struct stat st;
        SeatRecord trec = *rec;

        _cleanup_free_ char *iface = NULL;
        identity_domain_name(rec->id, k, name, sizeof(name));
        snprintf(trec.state, sizeof(trec.state), "provisioning"); /* never adopted as a seat */
        trec.generation = k + 1;
        int r = seat_manager_accel(m, &kvm, ret_error);
        /* The seat's NIC (same MAC and model: a restore may change only where it is
         * plugged in), on the standby network while the participant's machine has the
         * seat's own. */
        pthread_mutex_lock(&m->lock);
        if (r >= 0 && s->net && seatnet_standby_interface_xml(s->net, &iface) < 0)
                r = -ENOMEM;
        pthread_mutex_unlock(&m->lock);
        if (r >= 0)
                r = start_fresh(m, man, kvm, name, wp->overlay_tmp, wp->console, &trec, iface, identity_uid(rec, k), &dom,
                                ret_error);
        if (r >= 0 && (r = domain_agent_socket(dom, &sock)) < 0)
                r = seat_error_set(ret_error, -r, "domain '%s' has no agent channel", name);
        if (r >= 0)
                r = agent_client_connect_unix(sock, kvm ? AGENT_BOOT_TIMEOUT_KVM_MS : AGENT_BOOT_TIMEOUT_TCG_MS, &agent,
                                              ret_error);
        if (r >= 0 && (r = agent_client_hello_fresh(agent, kvm ? AGENT_BOOT_TIMEOUT_KVM_MS : AGENT_BOOT_TIMEOUT_TCG_MS,
                                                    &hello, ret_error)) < 0)
                (void) hello_failed("machine", name, rec->image, man->version, ret_error);
        if (r >= 0 && virDomainGetUUIDString(dom, uuid) < 0)
                r = seat_error_set(ret_error, EIO, "the UUID of domain '%s': %s", name, domain_last_error());
        if (r >= 0)
                r = domain_save(dom, wp->save_tmp, ret_error);
        agent = agent_client_free(agent); /* after the save: see above */
        if (dom) {
                if (r < 0)
                        (void) domain_stop(dom);
                virDomainFree(dom);
        }
        (void) unlink(wp->console);
        if (r < 0)
                return r;
        snprintf(meta.slot, sizeof(meta.slot), "%s", rec->id);
        snprintf(meta.domain, sizeof(meta.domain), "%s", name);
        snprintf(meta.uuid, sizeof(meta.uuid), "%s", uuid);
        snprintf(meta.image, sizeof(meta.image), "%s", rec->image);
        snprintf(meta.image_digest, sizeof(meta.image_digest), "%s", image_digest);
        meta.created = (int64_t) time(NULL);
        /* Saved, the state is seatd's (root's): a restore gives its copy of the overlay to
         * the uid that runs it. */
        if (chmod(wp->save_tmp, 0600) < 0 || chmod(wp->overlay_tmp, 0600) < 0 || chown(wp->save_tmp, 0, 0) < 0 ||
            chown(wp->overlay_tmp, 0, 0) < 0)
                return seat_error_set(ret_error, errno, "chmod the saved state of '%s': %m", name);
        if ((r = warm_file_hash(wp->save_tmp, meta.state_hash, &meta.state_size)) < 0 ||
            (r = warm_file_hash(wp->overlay_tmp, meta.overlay_hash, &meta.overlay_size)) < 0)
                return seat_error_set(ret_error, -r, "hash the saved state of '%s': %s", name, strerror(-r));
        if ((r = warm_meta_format(&meta, m->warm_key, &text, &len)) < 0)
                return seat_error_set(ret_error, -r, "format the sidecar of '%s'", name);
        if (rename(wp->save_tmp, wp->save) < 0 || rename(wp->overlay_tmp, wp->overlay) < 0)
                return seat_error_set(ret_error, errno, "put the saved state of '%s' in place: %m", name);
        if ((r = write_file_atomic(wp->meta, text, len, 0600)) < 0)
                return seat_error_set(ret_error, -r, "write '%s': %s", wp->meta, strerror(-r));
        if (stat(wp->save, &st) >= 0)
                seen_record(&s->seen[k], &st, meta.state_hash);
        log_seat_notice(rec->id, "seat '%s': saved the ready state of '%s' (%" PRIu64 " bytes) for warm resets",
                        rec->id, name, meta.state_size);
        return 0;
}

/* Check identity k's state, or make it. */
static int warm_prepare(SeatManager *m, Seat *s, int k, const SeatRecord *rec, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        _cleanup_(warm_paths_done) WarmPaths wp = {};
        _cleanup_free_ char *why = NULL;
        char digest[SEAT_HASH_HEX_LEN + 1];
        WarmMeta meta;
        int r = image_store_get(m->store, rec->image, &man, ret_error);
        if (r < 0)
                return r;
        (void) digest_to_hex(man->digest, SEAT_HASH_BYTES, digest, sizeof(digest));
        if ((r = warm_paths(m, rec->id, k, &wp)) < 0)
                return r;
        if (mkdir(wp.dir, 0711) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create '%s': %m", wp.dir);
        r = warm_check(m, s, k, digest, true, &wp, &meta, &why);
        if (r >= 0)
                return 0;
        if (r != -ENOENT)
                log_seat_warning(rec->id,
                                 "seat '%s': the saved state of identity g%d is refused (%s): making a new one",
                                 rec->id, k + 1, why ? why : "?");
        warm_remove(&wp);
        r = warm_make(m, s, k, rec, man, digest, &wp, ret_error);
        if (r < 0)
                warm_remove(&wp);
        return r;
}

/* Wait for identity k's previous machine to be destroyed (it usually is, long since). */
static void identity_join(Seat *s, int k) {
        pthread_mutex_lock(&s->warm_lock);
        bool d = s->destroying[k];
        pthread_t t = s->destroyer[k];
        s->destroying[k] = false;
        pthread_mutex_unlock(&s->warm_lock);
        if (!d)
                return;
        void *res = NULL;
        pthread_join(t, &res);
        if (res) {
                log_seat_error(s->rec.id, "seat '%s': the old machine g%d could not be destroyed: %s", s->rec.id, k + 1,
                               (char *) res);
                pthread_mutex_lock(&s->warm_lock);
                free(s->teardown_fault);
                s->teardown_fault = res;
                pthread_mutex_unlock(&s->warm_lock);
        }
}

typedef struct PrepJob {
        SeatManager *m;
        Seat *s;                  /* a reference */
        int k;
        SeatRecord rec;
} PrepJob;

/* At most WARM_PREP_PARALLEL preparations at once; false when cancelled while waiting. */
static bool prep_acquire(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->prep_lock);
        while (m->prep_active >= WARM_PREP_PARALLEL && !s->prep_cancel)
                pthread_cond_wait(&m->prep_cond, &m->prep_lock);
        bool go = !s->prep_cancel;
        if (go)
                m->prep_active++;
        pthread_mutex_unlock(&m->prep_lock);
        return go;
}

static void prep_release(SeatManager *m) {
        pthread_mutex_lock(&m->prep_lock);
        m->prep_active--;
        pthread_cond_broadcast(&m->prep_cond);
        pthread_mutex_unlock(&m->prep_lock);
}

static void *prep_thread(void *p) {
        PrepJob *j = p;
        _cleanup_error_ SeatError *err = NULL;
        if (!prep_acquire(j->m, j->s))
                warm_set_standby(j->s, "none: the reset came before its state was made");
        else {
                identity_join(j->s, j->k);
                int r = warm_prepare(j->m, j->s, j->k, &j->rec, &err);
                prep_release(j->m);
                if (r < 0) {
                        log_seat_warning(j->rec.id, "seat '%s': no saved state for warm resets: %s", j->rec.id,
                                         err ? err->message : strerror(-r));
                        warm_set_standby(j->s, "none: %s", err ? err->message : strerror(-r));
                } else
                        warm_set_standby(j->s, "ready");
        }
        seat_unref(j->s);
        free(j);
        return NULL;
}

/* Under s->lock: make or check the state of the identity the next reset boots. */
static void prep_start(SeatManager *m, Seat *s) {
        if (!m->config->warm_reset || s->prep_running)
                return;
        PrepJob *j = calloc(1, sizeof(*j));
        if (!j)
                return;
        *j = (PrepJob) { .m = m, .s = s, .k = 1 - seat_identity(s->rec.generation), .rec = s->rec };
        pthread_mutex_lock(&m->lock);
        s->refs++;
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_lock(&m->prep_lock);
        s->prep_cancel = false;
        pthread_mutex_unlock(&m->prep_lock);
        warm_set_standby(s, "preparing");
        if (pthread_create(&s->prep, NULL, prep_thread, j) != 0) {
                warm_set_standby(s, "none: cannot start a thread");
                seat_unref(s);
                free(j);
                return;
        }
        s->prep_running = true;
}

/* Under s->lock: a preparation that has not started is dropped, one under way finished. */
static void prep_stop(SeatManager *m, Seat *s) {
        if (!s->prep_running)
                return;
        pthread_mutex_lock(&m->prep_lock);
        s->prep_cancel = true;
        pthread_cond_broadcast(&m->prep_cond);
        pthread_mutex_unlock(&m->prep_lock);
        pthread_join(s->prep, NULL);
        s->prep_running = false;
}

/* The restored machine is still paused: connect to its agent channel first, then let it
 * run. The guest's channel was saved connected (warm_make), so it never sees the host
 * leave and come back, and the hello that follows is the first thing it reads. */
static int warm_connect_and_resume(Seat *s, char **ret_why) {
        _cleanup_error_ SeatError *err = NULL;
        int r = open_agent(s, WARM_AGENT_TIMEOUT_MS, &err);
        if (r < 0)
                return asprintf(ret_why, "the restored machine's agent channel: %s", err ? err->message : strerror(-r)) < 0
                               ? -ENOMEM : r;
        if (virDomainResume(s->dom) < 0)
                return asprintf(ret_why, "resume the restored machine: %s", domain_last_error()) < 0 ? -ENOMEM : -EIO;
        return 0;
}

/* Restore the saved state of the seat's current identity as its new machine: a fresh copy
 * of the saved overlay, and the saved definition with only the source paths (overlay,
 * console) and the record changed; running, with the agent channel connected. 0, or < 0
 * with the reason in *ret_why (boot cold). */
static int warm_restore(SeatManager *m, Seat *s, const ImageManifest *man, bool kvm, char **ret_why) {
        _cleanup_(warm_paths_done) WarmPaths wp = {};
        _cleanup_(spec_files_done) SpecFiles f = {};
        _cleanup_(domain_boot_copies_done) DomainBootCopies boot = {};
        _cleanup_error_ SeatError *err = NULL;
        char digest[SEAT_HASH_HEX_LEN + 1], name[64], hash[SEAT_HASH_HEX_LEN + 1];
        int k = seat_identity(s->rec.generation);
        uint64_t size = 0;
        WarmMeta meta;
        (void) digest_to_hex(man->digest, SEAT_HASH_BYTES, digest, sizeof(digest));
        int r = warm_paths(m, s->rec.id, k, &wp);
        if (r < 0)
                return r;
        r = warm_check(m, s, k, digest, false, &wp, &meta, ret_why);
        if (r == -ENOENT) {
                free(*ret_why);
                pthread_mutex_lock(&s->warm_lock);
                *ret_why = strdup(s->warm_standby && strncmp(s->warm_standby, "none: ", 6) == 0
                                          ? s->warm_standby + 6 : "this slot has no saved state yet");
                pthread_mutex_unlock(&s->warm_lock);
                return r;
        }
        if (r < 0) {
                log_seat_warning(s->rec.id, "seat '%s': the saved state of identity g%d is refused: %s; booting cold",
                                 s->rec.id, k + 1, *ret_why ? *ret_why : "?");
                warm_remove(&wp);
                s->seen[k].valid = false;
                return r;
        }
        r = warm_file_copy(wp.overlay, s->overlay, 0600);
        if (r >= 0)
                r = warm_file_hash(s->overlay, hash, &size);
        /* After the hash: what is hashed is root's copy, which QEMU's uid gets only now. */
        if (r >= 0)
                r = overlay_give(s->overlay, identity_uid(&s->rec, k), NULL);
        if (r >= 0 && (size != meta.overlay_size || strcmp(hash, meta.overlay_hash) != 0))
                r = -EBADMSG;
        if (r >= 0)
                r = spec_files(m, man, &f);
        if (r >= 0)
                r = domain_boot_copies(f.kernel, f.initrd, s->overlay, &boot, NULL);
        if (r < 0) {
                (void) unlink(s->overlay);
                if (r == -EBADMSG)
                        warm_remove(&wp);
                return asprintf(ret_why, r == -EBADMSG ? "the saved overlay does not match its hash (damaged)" :
                                                         "copy the saved overlay: %s", strerror(-r)) < 0 ? -ENOMEM : r;
        }
        _cleanup_free_ char *iface = NULL;
        if (s->net && seatnet_interface_xml(s->net, &iface) < 0) {
                (void) unlink(s->overlay);
                return -ENOMEM;
        }
        seat_domain_name(&s->rec, name, sizeof(name));
        DomainSpec spec = { .name = name, .kvm = kvm, .manifest = man, .kernel = boot.kernel, .initrd = boot.initrd,
                            .base = f.base, .overlay = s->overlay, .console_log = s->console_log, .record = &s->rec,
                            .uuid = meta.uuid, .interface_xml = iface, .qemu_uid = identity_uid(&s->rec, k) };
        virConnectPtr c = manager_conn(m, &err);
        r = c ? domain_restore(c, wp.save, &spec, true, &s->dom, &err) : -ECONNREFUSED;
        if (c)
                virConnectClose(c);
        if (r < 0) {
                (void) unlink(s->overlay);
                return asprintf(ret_why, "%s", err ? err->message : strerror(-r)) < 0 ? -ENOMEM : r;
        }
        r = warm_connect_and_resume(s, ret_why);
        if (r < 0) {
                s->agent = agent_client_free(s->agent);
                (void) domain_stop(s->dom);
                s->dom = (virDomainFree(s->dom), NULL);
                (void) unlink(s->overlay);
        }
        return r;
}

static void set_reset_mode(Seat *s, const char *mode, const char *why) {
        pthread_mutex_lock(&s->warm_lock);
        free(s->reset_mode);
        free(s->reset_reason);
        s->reset_mode = strdup(mode);
        s->reset_reason = why ? strdup(why) : NULL;
        pthread_mutex_unlock(&s->warm_lock);
}

/* The running QEMU has at least the confinement the config requires, or the seat does not
 * start: never a seat with less protection than configured. Recorded for status. */
static int check_confinement(SeatManager *m, Seat *s, SeatError **ret_error) {
        const SeatConfig *c = m->config;
        DomainConfinement dc = {};
        bool none = !strcmp(c->require_confinement, "none");
        int r = domain_confinement(s->dom, c->qemu_run_dir, &dc);
        s->confinement = dc;
        if (r < 0 && !none)
                return seat_error_set(ret_error, ESRCH,
                                      "seat '%s': cannot find its QEMU process in '%s' to check its confinement (qemu_run_dir; require_confinement = none skips the check)",
                                      s->rec.id, c->qemu_run_dir);
        if (!none && dc.uid == 0)
                return seat_error_set(ret_error, EPERM,
                                      "seat '%s': QEMU runs as root; require_confinement = %s needs libvirt's DAC driver to run it as an unprivileged user (user/group in /etc/libvirt/qemu.conf)",
                                      s->rec.id, c->require_confinement);
        /* Its own uid, nobody else's (issue 13 #8): libvirt honoured the static label. */
        uid_t want = identity_uid(&s->rec, seat_identity(s->rec.generation));
        if (!none && r >= 0 && dc.uid != want)
                return seat_error_set(ret_error, EPERM,
                                      "seat '%s': QEMU runs as uid %u, not the seat's own uid %u (qemu_uid_range); libvirt did not apply its DAC label",
                                      s->rec.id, (unsigned) dc.uid, (unsigned) want);
        if (!strcmp(c->require_confinement, "mac") && !dc.mac[0])
                return seat_error_set(ret_error, EPERM,
                                      "seat '%s': require_confinement = mac, but QEMU has no AppArmor or SELinux label on this host (enable one for libvirt, or set require_confinement = dac)",
                                      s->rec.id);
        if (c->require_seccomp && r >= 0 && !dc.seccomp)
                return seat_error_set(ret_error, EPERM,
                                      "seat '%s': QEMU runs without its seccomp sandbox (seccomp_sandbox in /etc/libvirt/qemu.conf), and require_seccomp = true",
                                      s->rec.id);
        return 0;
}

/* Restore the slot's saved state (cold_why NULL) or boot from the verified image, and bring
 * the agent up: provision's and reset's core. cold_why: why not warm. */
static int boot_seat(SeatManager *m, Seat *s, const char *cold_why, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        bool kvm = false;
        int r = seat_manager_accel(m, &kvm, ret_error);
        if (r < 0)
                return r;
        r = image_store_get(m->store, s->rec.image, &man, ret_error);
        if (r < 0)
                return r;
        if (s->rec.image_version != 0 && man->version != s->rec.image_version)
                log_seat_info(s->rec.id, "seat '%s' moves from image version %" PRId64 " to %" PRId64, s->rec.id,
                              s->rec.image_version, man->version);
        s->rec.image_version = man->version;
        (void) digest_to_hex(man->digest, SEAT_HASH_BYTES, s->rec.image_digest, sizeof(s->rec.image_digest));
        if (remember_evidence_paths(s, man) < 0)
                return -ENOMEM;
        r = seat_uid_take(m, s, ret_error);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        s->memory_mib = man->memory_mib > 0 ? (uint64_t) man->memory_mib : 0;
        pthread_mutex_unlock(&m->lock);
        if (mkdir(s->dir, 0755) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create seat directory '%s': %m", s->dir);
        r = disk_admit_image(m, s, man, ret_error);
        if (r < 0)
                return r;
        _cleanup_free_ char *why = NULL;
        bool warm = false;
        int64_t t0 = now_monotonic_ms();
        if (!m->config->warm_reset)
                why = strdup("warm_reset = false in seatd.conf");
        else if (cold_why)
                why = strdup(cold_why);
        else if (warm_restore(m, s, man, kvm, &why) >= 0) {
                warm = true;
                log_seat_debug(s->rec.id, "seat '%s': restored at +%" PRId64 " ms", s->rec.id, now_monotonic_ms() - t0);
                r = greet_agent(s, true, WARM_AGENT_TIMEOUT_MS, ret_error);
                if (r < 0) {
                        /* Not this state again: the next preparation makes a new one. */
                        _cleanup_(warm_paths_done) WarmPaths wp = {};
                        log_seat_warning(s->rec.id, "seat '%s': the restored machine did not answer (%s): booting cold",
                                         s->rec.id, (*ret_error)->message);
                        free(why);
                        why = strdup((*ret_error)->message);
                        *ret_error = seat_error_free(*ret_error);
                        s->agent = agent_client_free(s->agent);
                        (void) domain_stop(s->dom);
                        s->dom = (virDomainFree(s->dom), NULL);
                        (void) unlink(s->overlay);
                        if (warm_paths(m, s->rec.id, seat_identity(s->rec.generation), &wp) >= 0)
                                warm_remove(&wp);
                        warm = false;
                }
        }
        if (!warm) {
                r = build_spec_and_start(m, s, man, kvm, ret_error);
                if (r < 0)
                        return r;
                r = connect_agent(s, true, kvm ? AGENT_BOOT_TIMEOUT_KVM_MS : AGENT_BOOT_TIMEOUT_TCG_MS, ret_error);
                if (r < 0)
                        return r;
        }
        set_reset_mode(s, warm ? "warm" : "cold", warm ? NULL : why ? why : "unknown");
        set_live_domain(m, s, virDomainGetName(s->dom));
        r = check_confinement(m, s, ret_error);
        if (r < 0) {
                (void) domain_stop(s->dom); /* not one moment longer than the check */
                return r;
        }
        log_seat_debug(s->rec.id, "seat '%s': agent up at +%" PRId64 " ms", s->rec.id, now_monotonic_ms() - t0);
        r = configure_identity(s, ret_error);
        if (r < 0)
                return r;
        return session_open(m, s, ret_error);
}

/* ---- transitions ---- */

/* A new seat, booted cold. pooled: for a pool, nobody's (its token is never handed out). */
static int provision_new(SeatManager *m, const char *image, const char *participant, const char *egress, bool pooled,
                         Seat **ret, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        Seat *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->ticket_lock, NULL);
        pthread_mutex_init(&s->audit_lock, NULL);
        pthread_mutex_init(&s->warm_lock, NULL);
        pthread_mutex_init(&s->view_lock, NULL);
        s->m = m;
        s->refs = 1;
        s->uid_slot[0] = s->uid_slot[1] = -1;
        s->rec.net_index = -1;
        snprintf(s->rec.id, sizeof(s->rec.id), "s");
        random_hex(s->rec.id + 1, 4);
        snprintf(s->rec.image, sizeof(s->rec.image), "%s", image);
        snprintf(s->rec.participant, sizeof(s->rec.participant), "%s", participant);
        s->rec.generation = 1;
        s->rec.created = (int64_t) time(NULL);
        s->rec.pooled = pooled;
        seat_set_state(s, SEAT_PROVISIONING);

        r = seat_paths(m, s);
        if (r >= 0)
                r = new_token(s, false, &token);
        if (r >= 0 && mkdir(s->dir, 0755) < 0 && errno != EEXIST)
                r = seat_error_set(ret_error, errno, "create seat directory '%s': %m", s->dir);
        if (r >= 0)
                r = seat_net_up(m, s, egress, ret_error);
        if (r >= 0)
                r = boot_seat(m, s, "a new seat boots cold; its saved state is made beside it", ret_error);
        if (r >= 0) {
                seat_set_state(s, SEAT_READY);
                r = domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (r >= 0 && pooled) {
                pthread_mutex_lock(&m->lock);
                s->pooled = true;
                s->pool_seq = ++m->pool_seq;
                pthread_mutex_unlock(&m->lock);
        }
        if (r >= 0)
                r = table_add(m, s);
        disk_settle(m, s);
        if (r >= 0)
                prep_start(m, s);
        if (r < 0) {
                log_seat_warning(s->rec.id, "provision of seat '%s' failed: %s", s->rec.id,
                                 *ret_error ? (*ret_error)->message : strerror(-r));
                seat_teardown(s);
                seat_free(s);
                return r;
        }
        if (pooled)
                log_seat_notice(s->rec.id, "seat '%s' ready in the pool of image '%s' (egress '%s')", s->rec.id, image,
                                s->rec.egress);
        else
                log_seat_notice(s->rec.id, "seat '%s' ready: image '%s' version %" PRId64 ", participant '%s'",
                                s->rec.id, image, s->rec.image_version, participant);
        *ret = s; /* the caller's reference */
        *ret_token = TAKE_PTR(token);
        return 0;
}

static void seat_fault(Seat *s, const char *why) {
        free(s->fault);
        s->fault = strdup(why);
        seat_set_state(s, SEAT_FAULTED); /* publishes the fault with the state */
        if (s->dom)
                (void) domain_set_record(s->dom, &s->rec, NULL);
        log_seat_warning(s->rec.id, "seat '%s' faulted: %s", s->rec.id, why);
}

/* ---- pools: seats kept READY for nobody, claimed by provision (docs/pools.md) ---- */

void seat_manager_set_pool_fn(SeatManager *m, SeatPoolFn fn, void *userdata) {
        pthread_mutex_lock(&m->lock);
        m->pool_fn = fn;
        m->pool_userdata = userdata;
        pthread_mutex_unlock(&m->lock);
}

static void pool_notify(SeatManager *m, SeatPoolEvent ev, const char *image, const char *egress) {
        pthread_mutex_lock(&m->lock);
        SeatPoolFn fn = m->pool_fn;
        void *u = m->pool_userdata;
        pthread_mutex_unlock(&m->lock);
        if (fn)
                fn(ev, image, egress, u);
}

const char *seat_manager_egress_name(SeatManager *m, const char *egress) {
        if (!m->config->network)
                return "";
        return egress ? egress : m->config->default_egress;
}

bool seat_pooled(Seat *s) {
        pthread_mutex_lock(&s->m->lock);
        bool p = s->pooled;
        pthread_mutex_unlock(&s->m->lock);
        return p;
}

int seat_provision_pooled(SeatManager *m, const char *image, const char *egress, SeatError **ret_error) {
        _cleanup_(seat_unrefp) Seat *s = NULL;
        char *token = NULL;
        if (!image_name_valid(image))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an image name", image);
        int r = provision_new(m, image, "", egress, true, &s, &token, ret_error);
        if (token) /* nobody ever learns it: a claim makes a new one */
                sodium_memzero(token, strlen(token));
        free(token);
        return r;
}

int seat_manager_pooled(SeatManager *m, SeatPoolEntry **ret, size_t *ret_n) {
        pthread_mutex_lock(&m->lock);
        SeatPoolEntry *e = calloc(m->n_seats + 1, sizeof(*e));
        size_t n = 0;
        for (size_t i = 0; e && i < m->n_seats; i++) {
                const Seat *s = m->seats[i];
                if (!s->pooled || seat_state((Seat *) s) != SEAT_READY)
                        continue;
                snprintf(e[n].image, sizeof(e[n].image), "%s", s->rec.image);
                snprintf(e[n].egress, sizeof(e[n].egress), "%s", s->rec.egress);
                n++;
        }
        pthread_mutex_unlock(&m->lock);
        if (!e)
                return -ENOMEM;
        *ret = e;
        *ret_n = n;
        return 0;
}

void seat_manager_usage(SeatManager *m, unsigned *ret_seats, uint64_t *ret_memory_mib) {
        uint64_t mem = 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++)
                mem += m->seats[i]->memory_mib;
        *ret_seats = (unsigned) m->n_seats;
        pthread_mutex_unlock(&m->lock);
        *ret_memory_mib = mem;
}

/* Under the manager's lock a pooled seat stops being pooled: whoever took it is the only
 * one who ever will (two claims never get one seat). The oldest first; NULL: none. */
Seat *seat_pool_take(SeatManager *m, const char *image, const char *egress) {
        Seat *best = NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats; i++) {
                Seat *s = m->seats[i];
                if (!s->pooled || seat_state(s) != SEAT_READY || __atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE) ||
                    strcmp(s->rec.image, image) != 0 || strcmp(s->rec.egress, egress) != 0)
                        continue;
                if (!best || s->pool_seq < best->pool_seq)
                        best = s;
        }
        if (best) {
                best->pooled = false;
                best->refs++;
        }
        pthread_mutex_unlock(&m->lock);
        return best;
}

Seat *seat_pool_take_broken(SeatManager *m) {
        Seat *r = NULL;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n_seats && !r; i++)
                if (m->seats[i]->pool_broken) {
                        r = m->seats[i];
                        r->pool_broken = false;
                        r->refs++;
                }
        pthread_mutex_unlock(&m->lock);
        return r;
}

/* Bind a seat just taken from its pool to a participant: only after its agent answers a
 * ping, with a new token, recorded in libvirt before anyone learns the token. A seat that
 * fails is faulted and left to the pool to release (never handed out). */
static int pool_claim(SeatManager *m, Seat *s, const char *participant, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        SeatRecord old;
        int r;
        pthread_mutex_lock(&s->lock);
        old = s->rec;
        if (seat_state(s) == SEAT_RELEASED) {
                /* An operator released it while it was being taken: nothing to fault. */
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, ESTALE, "seat '%s' was released meanwhile", s->rec.id);
        }
        if (seat_state(s) != SEAT_READY || !s->agent)
                r = seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        else if ((r = agent_client_ping(s->agent, POOL_CLAIM_PING_MS, ret_error)) < 0)
                (void) seat_error_wrap(ret_error, "its agent did not answer a ping within %d ms", POOL_CLAIM_PING_MS);
        else if ((r = new_token(s, false, &token)) >= 0) {
                snprintf(s->rec.participant, sizeof(s->rec.participant), "%s", participant);
                s->rec.pooled = false;
                r = domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (r < 0) {
                _cleanup_free_ char *why = NULL;
                /* Only what the claim changed: the rest of s->rec (its id, its image) is read
                 * by others without s->lock, and must not be written even with equal bytes. */
                pthread_mutex_lock(&s->ticket_lock);
                memcpy(s->rec.token_hash, old.token_hash, sizeof(old.token_hash));
                memcpy(s->rec.participant, old.participant, sizeof(old.participant));
                s->rec.pooled = old.pooled;
                pthread_mutex_unlock(&s->ticket_lock);
                if (asprintf(&why, "failed its health check when claimed from the pool: %s",
                             *ret_error ? (*ret_error)->message : strerror(-r)) < 0)
                        why = NULL;
                seat_fault(s, why ? why : "failed its health check when claimed from the pool");
                pthread_mutex_lock(&m->lock);
                s->pool_broken = true;
                pthread_mutex_unlock(&m->lock);
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        pthread_mutex_lock(&m->lock);
        s->from_pool = true;
        pthread_mutex_unlock(&m->lock);
        seat_view_publish(s); /* its participant */
        json_object *o = json_object_new_object();
        json_object_object_add(o, "participant", json_object_new_string(participant));
        (void) seat_audit(s, "claim", o);
        json_object_put(o);
        pthread_mutex_unlock(&s->lock);
        *ret_token = TAKE_PTR(token);
        return 0;
}

int seat_provision(SeatManager *m, const char *image, const char *participant, const char *egress, Seat **ret,
                   char **ret_token, SeatError **ret_error) {
        if (!image_name_valid(image))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an image name", image);
        if (!participant_valid(participant))
                return seat_error_set(ret_error, EINVAL,
                                      "participant names are at most %d letters, digits, spaces and @._+-", PARTICIPANT_MAX);
        const char *eg = seat_manager_egress_name(m, egress);
        Seat *s;
        while ((s = seat_pool_take(m, image, eg))) {
                _cleanup_error_ SeatError *err = NULL;
                char *token = NULL;
                if (pool_claim(m, s, participant, &token, &err) >= 0) {
                        log_seat_notice(s->rec.id,
                                        "seat '%s' claimed from the pool of image '%s' (egress '%s'): participant '%s'",
                                        s->rec.id, image, eg, participant);
                        pool_notify(m, SEAT_POOL_CLAIMED, image, eg);
                        *ret = s;
                        *ret_token = token;
                        return 0;
                }
                log_seat_warning(s->rec.id, "pooled seat '%s' is not handed out: %s%s", s->rec.id,
                                 err ? err->message : "?",
                                 seat_state(s) == SEAT_RELEASED ? "" : "; the pool releases and replaces it");
                if (seat_state(s) != SEAT_RELEASED)
                        pool_notify(m, SEAT_POOL_BROKEN, image, eg);
                seat_unref(s);
        }
        return provision_new(m, image, participant, egress, false, ret, ret_token, ret_error);
}

#define SESSION_END_GRACE_MS 3000 /* for the old guest to sync its disk and power off */

/* Reset and release take the seat from whatever runs in it: a running exec sees this
 * within 250 ms (agent_client_exec_cancellable() asks that often), has its process group
 * killed in the guest and gives up the lock; calls arriving meanwhile are refused. */
static void lock_preempting(Seat *s) {
        __atomic_add_fetch(&s->preempting, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_lock(&s->lock);
        __atomic_sub_fetch(&s->preempting, 1, __ATOMIC_ACQ_REL);
}

static bool preempted(Seat *s) {
        return __atomic_load_n(&s->preempting, __ATOMIC_ACQUIRE) > 0;
}

/* The session is over: ask the guest to sync and power off (guest-init: kill everything,
 * sync, remount read-only, power off), so what it wrote reaches the disk the evidence is
 * read from. A guest that does not comply is destroyed after the grace anyway. Returns
 * the grace to give the machine (0: not asked). */
static int end_session_in_guest(Seat *s, bool healthy) {
        if (!s->agent || !healthy)
                return 0;
        AgentMsg req = { .type = AGENT_MSG_SHUTDOWN, .shutdown = { .action = (char *) "poweroff" } };
        return agent_client_call(s->agent, &req, 2000, NULL, NULL) >= 0 ? SESSION_END_GRACE_MS : 0;
}

typedef struct DestroyJob {
        SeatManager *m;
        Seat *s;        /* a reference */
        virDomainPtr dom;
        int grace_ms;   /* for it to power off by itself first */
        char *qdir;     /* the old session's quarantine, sealed once the machine is gone */
} DestroyJob;

/* Returns NULL when the domain is gone, else a malloc'd reason. Then the old session is
 * sealed: libguestfs reads its overlay, which QEMU held until now. */
static void *destroy_thread(void *p) {
        DestroyJob *j = p;
        int r = domain_stop_after(j->dom, j->grace_ms);
        char *why = r < 0 ? strdup(domain_last_error()) : NULL;
        if (r < 0 && !why)
                why = strdup("destroy failed");
        virDomainFree(j->dom);
        if (j->qdir)
                seal_dir_in_background(j->m, j->s, j->s->rec.id, TAKE_PTR(j->qdir));
        seat_unref(j->s);
        free(j);
        return why;
}

/* Before the next machine is connected (issue #13, finding 6): the old one off the seat's
 * network (seatnet_unplug()) and every flow tracked for the guest's address forgotten. A
 * machine that cannot be taken off is destroyed here and now, without its grace; one that
 * cannot even be destroyed fails the reset: two machines with one MAC and one address never
 * share the bridge. */
static int handover_network(Seat *s, SeatError **ret_error) {
        _cleanup_error_ SeatError *err = NULL;
        if (!s->net)
                return 0;
        if (s->dom && seatnet_unplug(s->net, s->dom, &err) < 0) {
                log_seat_warning(s->rec.id, "seat '%s': %s: destroying the old machine now", s->rec.id,
                                 err ? err->message : "taking the old machine off the network failed");
                if (domain_stop(s->dom) < 0)
                        return seat_error_set(ret_error, EIO,
                                              "seat '%s': the old machine could be neither taken off the network (%s) nor destroyed (%s): the next one is not started beside it",
                                              s->rec.id, err ? err->message : "?", domain_last_error());
                s->dom = (virDomainFree(s->dom), NULL);
        }
        int r = seatnet_forget_flows(s->net, ret_error);
        return r < 0 ? r : 0;
}

int seat_reset(SeatManager *m, Seat *s, bool cold, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        lock_preempting(s);
        SeatState st = seat_state(s);
        if (st != SEAT_READY && st != SEAT_FAULTED) {
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(st));
        }
        if (seat_pooled(s)) {
                /* Its token would reach the operator: a pooled seat is nobody's. */
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, EBUSY,
                                      "seat '%s' is kept ready in the pool of image '%s': it is handed out by provision; shrink the pool ('seatctl pool set') or release it",
                                      s->rec.id, s->rec.image);
        }
        if (s->seal_fault) {
                int e = seat_error_set(ret_error, EBUSY,
                                       "seat '%s' is not reset while the evidence of an earlier session is not sealed (%s): fix that (e.g. free disk space), then 'seatctl evidence retry %s'",
                                       s->rec.id, s->seal_fault, s->rec.id);
                pthread_mutex_unlock(&s->lock);
                return e;
        }
        r = seat_refresh_dom(m, s, ret_error);
        if (r < 0) {
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        seat_set_state(s, SEAT_RESETTING);
        if (s->dom)
                (void) domain_set_record(s->dom, &s->rec, NULL);

        /* The old machine goes entirely: no byte of it is reused. Its destroy starts now (QEMU
         * is gone in milliseconds) and libvirt finishes it beside the new machine's start,
         * under the slot's other identity: nobody waits for it. Whoever next needs this
         * identity joins it first. */
        int handed = handover_network(s, ret_error);
        int grace = end_session_in_guest(s, st == SEAT_READY);
        s->agent = agent_client_free(s->agent);
        int old_k = seat_identity(s->rec.generation);
        session_close(s);
        char *qdir = NULL;
        r = quarantine(m, s, &qdir, ret_error);
        if (handed < 0)
                r = handed; /* the session is quarantined and sealed all the same */
        DestroyJob *dj = s->dom ? calloc(1, sizeof(*dj)) : NULL;
        if (dj) {
                *dj = (DestroyJob) { .m = m, .s = s, .dom = TAKE_PTR(s->dom), .grace_ms = grace, .qdir = TAKE_PTR(qdir) };
                pthread_mutex_lock(&m->lock);
                s->refs++;
                pthread_mutex_unlock(&m->lock);
                pthread_t t;
                if (pthread_create(&t, NULL, destroy_thread, dj) == 0) {
                        pthread_mutex_lock(&s->warm_lock);
                        s->destroyer[old_k] = t;
                        s->destroying[old_k] = true;
                        pthread_mutex_unlock(&s->warm_lock);
                } else
                        free(destroy_thread(dj)); /* here, then */
        } else if (s->dom) {
                (void) domain_stop(s->dom);
                s->dom = (virDomainFree(s->dom), NULL);
        }
        if (qdir) /* no machine to wait for */
                seal_in_background(m, s, true, TAKE_PTR(qdir));
        /* The next session, with its own token: requests authorised for the last one are
         * refused from here on (ticket_check()). Its files have names of their own: the old
         * machine's console may still be held open by virtlogd while its destroy completes. */
        if (r >= 0)
                r = new_token(s, true, &token);
        if (r >= 0)
                r = seat_paths(m, s);
        seat_view_publish(s); /* the old machine gone, the new generation's paths */
        /* The filter as the profile says, whatever happened to it meanwhile. */
        if (r >= 0 && s->net && (r = seatnet_reinstall(m->net, s->net, ret_error)) >= 0)
                __atomic_store_n(&s->net_paused, false, __ATOMIC_RELEASE);
        if (r >= 0) {
                /* The new identity: its saved state finished (or dropped when not begun), its
                 * previous machine gone. */
                prep_stop(m, s);
                identity_join(s, seat_identity(s->rec.generation));
                r = boot_seat(m, s, cold ? "a cold reset was asked for" : NULL, ret_error);
        }
        disk_settle(m, s);
        if (r >= 0) {
                seat_set_state(s, SEAT_READY);
                r = domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (r < 0) {
                seat_fault(s, *ret_error ? (*ret_error)->message : strerror(-r));
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        free(s->fault);
        s->fault = NULL;
        seat_view_publish(s);
        log_seat_notice(s->rec.id, "seat '%s' reset (%s%s%s): generation %" PRId64, s->rec.id, s->reset_mode,
                        s->reset_reason ? ": " : "", s->reset_reason ? s->reset_reason : "", s->rec.generation);
        prep_start(m, s);
        pthread_mutex_unlock(&s->lock);
        *ret_token = TAKE_PTR(token);
        return 0;
}

/* Released: both identities' machines gone, their saved states removed. */
static void warm_forget(SeatManager *m, Seat *s) {
        for (int k = 0; k < 2; k++) {
                _cleanup_(warm_paths_done) WarmPaths wp = {};
                identity_join(s, k);
                if (warm_paths(m, s->rec.id, k, &wp) >= 0) {
                        warm_remove(&wp);
                        (void) rmdir(wp.dir);
                }
        }
}

int seat_release(SeatManager *m, Seat *s, SeatError **ret_error) {
        lock_preempting(s);
        if (seat_state(s) == SEAT_RELEASED) {
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, ENOENT, "seat '%s' is released already", s->rec.id);
        }
        int r = seat_refresh_dom(m, s, ret_error);
        if (r < 0) {
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        int grace = end_session_in_guest(s, seat_state(s) == SEAT_READY);
        s->agent = agent_client_free(s->agent);
        if (s->dom) {
                (void) domain_stop_after(s->dom, grace);
                virDomainFree(s->dom);
                s->dom = NULL;
        }
        prep_stop(m, s);
        warm_forget(m, s);
        session_close(s);
        char *qdir = NULL;
        r = quarantine(m, s, &qdir, ret_error);
        if (r >= 0)
                seal_in_background(m, s, false, qdir);
        seat_net_down(m, s);
        (void) rmdir(s->dir);
        seat_set_state(s, SEAT_RELEASED);
        pthread_mutex_lock(&m->lock);
        bool was_pooled = s->pooled;
        s->pooled = false;
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_unlock(&s->lock);
        table_remove(m, s);
        if (r >= 0)
                log_seat_notice(s->rec.id, "seat '%s' released", s->rec.id);
        /* A pool's seat or the host's room for one changed. */
        pool_notify(m, was_pooled ? SEAT_POOL_BROKEN : SEAT_POOL_CHANGED, s->rec.image, s->rec.egress);
        return r;
}

/* ---- agent calls ---- */

static int agent_failed(Seat *s, int r, SeatError **ret_error) {
        /* A broken protocol or a dead channel: this seat's agent cannot be trusted now. */
        /* A timeout too: the agent stalled (maybe mid-frame) past the tool's own timeout
         * and its grace, and what it sends next could belong to anything. */
        if (r == -EPROTO || r == -ECONNRESET || r == -EPIPE || r == -ETIMEDOUT)
                seat_fault(s, *ret_error ? (*ret_error)->message : "agent channel failed");
        return r;
}

/* A seat stopped because its egress filter changed takes no calls until it is restored. */
static bool refuse_paused(Seat *s, int *r, SeatError **ret_error) {
        if (!__atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE))
                return false;
        *r = seat_error_set(ret_error, EAGAIN,
                            "seat '%s' is paused: its egress rules were changed behind seatd's back (see 'seatctl status'); reset it to restore them",
                            s->rec.id);
        return true;
}

/* Under s->lock: may a call for ticket reach the guest now? */
static int call_allowed(Seat *s, const SeatTicket *ticket, SeatError **ret_error) {
        int r;
        if (refuse_paused(s, &r, ret_error))
                return r;
        if (seat_state(s) != SEAT_READY || !s->agent)
                return seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        r = ticket_check(s, ticket, ret_error);
        if (r < 0)
                return r;
        if (preempted(s))
                return seat_error_set(ret_error, EBUSY, "seat '%s' is being reset or released: not run", s->rec.id);
        return 0;
}

/* Under s->lock: record type in this session's audit log, or say why not. ret_seq: the
 * record's seq. A call that must be recorded first is not made without it. */
static int audit_locked(Seat *s, const char *type, json_object *data, uint64_t *ret_seq, SeatError **ret_error) {
        _cleanup_error_ SeatError *err = NULL;
        int r;
        pthread_mutex_lock(&s->audit_lock);
        uint64_t seq = audit_log_count(s->audit);
        if (!s->audit)
                r = seat_error_set(&err, ESTALE, "this session has no audit log");
        else
                r = audit_log_append(s->audit, type, data, &err);
        pthread_mutex_unlock(&s->audit_lock);
        if (r < 0) {
                log_seat_error(s->rec.id, "seat '%s': cannot append '%s' to the audit log: %s", s->rec.id, type,
                               err ? err->message : "?");
                return seat_error_set(ret_error, EIO, "seat '%s': the audit log cannot record this call (%s): it was not run",
                                      s->rec.id, err ? err->message : "?");
        }
        if (ret_seq)
                *ret_seq = seq;
        return 0;
}

/* Between the agent client and the caller of seat_exec(): the caller's output handler and
 * cancellation, and the seat's preemption by a reset or release. */
typedef struct ExecRelay {
        Seat *s;
        AgentOutputFn on_output;
        bool (*cancelled)(void *);
        void *userdata;
        bool preempted;
} ExecRelay;

static int exec_relay_output(bool is_stderr, const uint8_t *data, size_t len, void *p) {
        ExecRelay *c = p;
        return c->on_output ? c->on_output(is_stderr, data, len, c->userdata) : 0;
}

static bool exec_relay_cancelled(void *p) {
        ExecRelay *c = p;
        if (!c->preempted && preempted(c->s))
                c->preempted = true;
        return c->preempted || (c->cancelled && c->cancelled(c->userdata));
}

static const char *exec_status(int r, const AgentExecResult *res) {
        if (r == -ECANCELED)
                return "cancelled";
        if (r < 0)
                return "error";
        return res->timed_out ? "timed_out" : "exited";
}

int seat_exec(Seat *s, const SeatTicket *ticket, AgentMsg *req, json_object *audit_start, SeatExecEndFn end_record,
              AgentOutputFn on_output, bool (*cancelled)(void *), void *userdata, int timeout_ms, AgentExecResult *ret,
              SeatError **ret_error) {
        ExecRelay relay = { .s = s, .on_output = on_output, .cancelled = cancelled, .userdata = userdata };
        AgentExecResult res = {};
        uint64_t start_seq = 0;
        pthread_mutex_lock(&s->lock);
        int r = call_allowed(s, ticket, ret_error);
        if (r >= 0)
                r = audit_locked(s, "exec.start", audit_start, &start_seq, ret_error);
        if (r < 0) {
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        r = agent_client_exec_cancellable(s->agent, req, exec_relay_output, exec_relay_cancelled, &relay, timeout_ms,
                                          &res, ret_error);
        if (r == -ECANCELED && relay.preempted) {
                *ret_error = seat_error_free(*ret_error);
                r = seat_error_set(ret_error, ECANCELED,
                                   "cancelled: an operator resets or releases seat '%s'; the command's process group was killed in the guest",
                                   s->rec.id);
        }
        /* The end goes to the same session's log as the start, before anyone else gets the seat. */
        _cleanup_json_ json_object *end = end_record ? end_record(r, r >= 0 ? &res : NULL, r < 0 ? *ret_error : NULL, userdata)
                                                     : json_object_new_object();
        if (end) {
                json_object_object_add(end, "start", json_object_new_int64((int64_t) start_seq));
                json_object_object_add(end, "status", json_object_new_string(exec_status(r, &res)));
                if (r == -ECANCELED)
                        json_object_object_add(end, "cancelled_by",
                                               json_object_new_string(relay.preempted ? "reset or release" : "client"));
        }
        if (!end || audit_locked(s, "exec.end", end, NULL, NULL) < 0)
                log_seat_error(s->rec.id, "seat '%s': the end of exec record %" PRIu64 " is not in the audit log",
                               s->rec.id, start_seq);
        if (r < 0 && r != -ECANCELED)
                r = agent_failed(s, r, ret_error);
        pthread_mutex_unlock(&s->lock);
        if (r < 0) {
                agent_exec_result_done(&res);
                return r;
        }
        *ret = res;
        return 0;
}

int seat_agent_call(Seat *s, const SeatTicket *ticket, AgentMsg *req, int timeout_ms, const char *audit_type,
                    json_object *audit_data, AgentMsg **ret_reply, SeatError **ret_error) {
        pthread_mutex_lock(&s->lock);
        int r = call_allowed(s, ticket, ret_error);
        if (r >= 0 && audit_type)
                r = audit_locked(s, audit_type, audit_data, NULL, ret_error);
        if (r >= 0) {
                r = agent_client_call(s->agent, req, timeout_ms, ret_reply, ret_error);
                if (r < 0 && r != -EREMOTEIO)
                        r = agent_failed(s, r, ret_error);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int seat_to_json(Seat *s, json_object **ret) {
        char created[32];
        /* What changes under s->lock, as last published: never s's own fields, which a
         * reset or a fault may be freeing right now (see SeatView). */
        SeatView v;
        if (seat_view_get(s, &v) < 0)
                return -ENOMEM;
        json_object *o = json_object_new_object();
        if (!o || rfc3339_format(s->rec.created, created, sizeof(created)) < 0) {
                json_object_put(o);
                seat_view_done(&v);
                return -ENOMEM;
        }
        json_object_object_add(o, "id", json_object_new_string(s->rec.id));
        json_object_object_add(o, "state", json_object_new_string(seat_state_to_string(seat_state(s))));
        json_object_object_add(o, "image", json_object_new_string(s->rec.image));
        json_object_object_add(o, "image_version", json_object_new_int64(v.image_version));
        json_object_object_add(o, "participant", json_object_new_string(v.participant));
        pthread_mutex_lock(&s->m->lock);
        if (s->pooled)
                json_object_object_add(o, "pool", json_object_new_boolean(true));
        if (s->from_pool)
                json_object_object_add(o, "from_pool", json_object_new_boolean(true));
        pthread_mutex_unlock(&s->m->lock);
        json_object_object_add(o, "generation", json_object_new_int64(v.generation));
        json_object_object_add(o, "created", json_object_new_string(created));
        json_object_object_add(o, "domain", json_object_new_string(v.domain));
        if (v.confinement.known) {
                json_object *cf = json_object_new_object();
                json_object_object_add(cf, "uid", json_object_new_int64((int64_t) v.confinement.uid));
                json_object_object_add(cf, "seccomp", json_object_new_boolean(v.confinement.seccomp));
                json_object_object_add(cf, "mac", json_object_new_string(v.confinement.mac[0] ? v.confinement.mac : "none"));
                json_object_object_add(o, "confinement", cf);
        }
        if (v.disk_virtual) {
                json_object *d = json_object_new_object();
                json_object_object_add(d, "virtual_bytes", json_object_new_int64((int64_t) v.disk_virtual));
                json_object_object_add(d, "used_bytes", json_object_new_int64((int64_t) file_allocated(v.overlay)));
                json_object_object_add(o, "disk", d);
        }
        if (v.fault)
                json_object_object_add(o, "fault", json_object_new_string(v.fault));
        if (v.seal_fault)
                json_object_object_add(o, "evidence_fault", json_object_new_string(v.seal_fault));
        seat_view_done(&v);
        json_object *net = NULL;
        pthread_mutex_lock(&s->m->lock);
        if (s->net && seatnet_to_json(s->m->net, s->net, &net) >= 0) {
                json_object_object_add(net, "paused", json_object_new_boolean(__atomic_load_n(&s->net_paused, __ATOMIC_ACQUIRE)));
                json_object_object_add(net, "tamper_events", json_object_new_int64(s->tamper_count));
                if (s->last_tamper)
                        json_object_object_add(net, "last_tamper", json_object_get(s->last_tamper));
        }
        pthread_mutex_unlock(&s->m->lock);
        json_object_object_add(o, "network", net);
        /* Warm reset: how this generation came up, and what the next reset can restore. */
        pthread_mutex_lock(&s->warm_lock);
        json_object_object_add(o, "reset_mode", json_object_new_string(s->reset_mode ? s->reset_mode : "unknown"));
        if (s->reset_reason)
                json_object_object_add(o, "reset_reason", json_object_new_string(s->reset_reason));
        json_object_object_add(o, "warm_standby",
                               json_object_new_string(!s->m->config->warm_reset ? "off (warm_reset = false)"
                                                      : s->warm_standby ? s->warm_standby : "none"));
        if (s->teardown_fault)
                json_object_object_add(o, "teardown_fault", json_object_new_string(s->teardown_fault));
        pthread_mutex_unlock(&s->warm_lock);
        *ret = o;
        return 0;
}

/* ---- the manager ---- */

/* The host key signs archives: made at first start (its public half beside it, for
 * seat-evidence verify). The facilitator key, when configured, is what archives are
 * sealed to. */
static int load_evidence_keys(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
        int r = seat_secret_key_load(config->host_key, NULL, NULL, &m->host_key, NULL);
        if (r == -ENOENT) {
                _cleanup_free_ char *pub = NULL;
                SeatPublicKey pk;
                size_t n = strlen(config->host_key);
                r = seat_secret_key_generate(&m->host_key);
                if (r >= 0)
                        r = seat_secret_key_save(m->host_key, config->host_key, NULL, NULL, ret_error);
                if (r >= 0 && asprintf(&pub, "%.*s.pub", (int) (n > 4 && !strcmp(config->host_key + n - 4, ".key") ? n - 4 : n),
                                       config->host_key) < 0)
                        r = -ENOMEM;
                if (r >= 0) {
                        seat_secret_key_public(m->host_key, &pk);
                        r = seat_public_key_save(&pk, pub, ret_error);
                }
                if (r >= 0)
                        log_notice("made the host key '%s' that signs evidence archives (public key: '%s')", config->host_key, pub);
        }
        if (r < 0)
                return seat_error_set(ret_error, -r, "host key '%s': %s (an unprotected minisign secret key)", config->host_key,
                                      strerror(-r));
        if (!config->facilitator_key) {
                log_warning("no facilitator_key in the config: sessions are kept in the quarantine, not sealed into archives");
                return 0;
        }
        r = seat_box_public_key_load(config->facilitator_key, &m->facilitator, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "facilitator_key '%s'", config->facilitator_key);
        m->have_facilitator = true;
        return 0;
}

/* ---- egress tampering ---- */

static void tamper_record(SeatManager *m, Seat *s, NftSeatState st, int64_t detected, int64_t paused, bool ok_pause,
                          int64_t resumed, const char *restore_error) {
        json_object *o = json_object_new_object();
        if (!o)
                return;
        json_object_object_add(o, "state", json_object_new_string(nft_seat_state_to_string(st)));
        json_object_object_add(o, "detected_ms", json_object_new_int64(detected));
        json_object_object_add(o, "paused", json_object_new_boolean(ok_pause));
        json_object_object_add(o, "paused_ms", json_object_new_int64(paused));
        if (resumed)
                json_object_object_add(o, "restored_ms", json_object_new_int64(resumed));
        if (restore_error)
                json_object_object_add(o, "restore_error", json_object_new_string(restore_error));
        (void) seat_audit(s, "egress.tampered", o);
        pthread_mutex_lock(&m->lock);
        s->tamper_count++;
        json_object_put(s->last_tamper);
        s->last_tamper = o;
        pthread_mutex_unlock(&m->lock);
}

/* Pause first (the filter is open or wrong right now), then, if the config says so, put
 * the rules back, read them back, and resume. Runs on the event loop: suspending a domain
 * takes milliseconds. */
static void on_net_tamper(const char *seat_id, NftSeatState st, void *userdata) {
        SeatManager *m = userdata;
        _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, seat_id);
        _cleanup_error_ SeatError *err = NULL;
        char name[64];
        int64_t detected = now_realtime_ms(), paused = 0, resumed = 0;
        bool ok_pause = false;

        if (!s)
                return;
        pthread_mutex_lock(&m->lock);
        (void) snprintf(name, sizeof(name), "%s", s->live_domain);
        pthread_mutex_unlock(&m->lock);
        virConnectPtr c = manager_conn(m, NULL);
        virDomainPtr d = c && name[0] ? virDomainLookupByName(c, name) : NULL;
        __atomic_store_n(&s->net_paused, true, __ATOMIC_RELEASE);
        if (d) {
                ok_pause = virDomainSuspend(d) == 0;
                paused = now_realtime_ms();
        }
        log_seat_warning(seat_id, "seat '%s': its egress rules are %s (changed behind seatd's back): %s", seat_id,
                         nft_seat_state_to_string(st), ok_pause ? "paused" : "could not pause it");
        if (m->config->tamper_resume) {
                pthread_mutex_lock(&m->lock);
                int r = s->net ? seatnet_reinstall(m->net, s->net, &err) : -ENOENT;
                pthread_mutex_unlock(&m->lock);
                if (r >= 0 && (!d || virDomainResume(d) == 0 || !ok_pause)) {
                        resumed = now_realtime_ms();
                        __atomic_store_n(&s->net_paused, false, __ATOMIC_RELEASE);
                        log_seat_notice(seat_id, "seat '%s': egress rules restored and read back; resumed", seat_id);
                } else
                        log_seat_error(seat_id, "seat '%s' stays paused: %s", seat_id,
                                       err ? err->message : domain_last_error());
        }
        tamper_record(m, s, st, detected, paused, ok_pause, resumed, err ? err->message : NULL);
        if (d)
                virDomainFree(d);
        if (c)
                virConnectClose(c);
}

int seat_manager_net_fd(SeatManager *m) {
        return seatnet_fd(m->net);
}

void seat_manager_net_process(SeatManager *m) {
        seatnet_process(m->net);
}

unsigned seat_manager_tick_ms(SeatManager *m) {
        return (unsigned) m->config->egress_check_interval * 1000u;
}

/* The periodic backstop: read every seat's rules back, and record denied packets. */
void seat_manager_tick(SeatManager *m) {
        Seat **all = seat_manager_all(m);
        seatnet_check(m->net);
        for (Seat **p = all; p && *p; p++) {
                pthread_mutex_lock(&m->lock);
                uint64_t d = (*p)->net ? seatnet_denied_delta(m->net, (*p)->net) : 0;
                pthread_mutex_unlock(&m->lock);
                if (d > 0) {
                        json_object *o = json_object_new_object();
                        json_object_object_add(o, "packets", json_object_new_int64((int64_t) d));
                        (void) seat_audit(*p, "egress.denied", o);
                        json_object_put(o);
                        log_seat_debug(seat_id(*p), "seat '%s': %" PRIu64 " packets denied by its egress filter",
                                       seat_id(*p), d);
                }
                seat_unref(*p);
        }
        free(all);
}

/* <state_dir>/warm: 0711 so QEMU reaches a state's overlay while it is made (by name only:
 * nothing there can be listed); every file in it 0600, the key MACing the sidecars too. */
static int warm_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
        _cleanup_free_ char *key = NULL;
        if (asprintf(&m->warm_dir, "%s/warm", config->state_dir) < 0 || asprintf(&key, "%s/key", m->warm_dir) < 0)
                return -ENOMEM;
        if (mkdir(m->warm_dir, 0711) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create '%s': %m", m->warm_dir);
        if (chmod(m->warm_dir, 0711) < 0)
                return seat_error_set(ret_error, errno, "chmod '%s': %m", m->warm_dir);
        return warm_key_load(key, m->warm_key, ret_error);
}

int seat_manager_new(const SeatConfig *config, ImageStore *store, SeatManager **ret, SeatError **ret_error) {
        SeatManager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->conn_lock, NULL);
        pthread_mutex_init(&m->prep_lock, NULL);
        pthread_cond_init(&m->prep_cond, NULL);
        m->config = config;
        m->store = store;
        int r = sodium_init() < 0 ? -EIO : 0;
        if (r >= 0 && (asprintf(&m->seats_dir, "%s/seats", config->state_dir) < 0 ||
                       asprintf(&m->quarantine_dir, "%s/evidence/quarantine", config->state_dir) < 0))
                r = -ENOMEM;
        /* 0711: evidence_collect_user reaches the one overlay it is handed by its name
         * (seatd/collect.c); listing stays root's, every file in it is 0600. */
        if (r >= 0 && ((mkdir(m->quarantine_dir, 0711) < 0 && errno != EEXIST) || chmod(m->quarantine_dir, 0711) < 0))
                r = seat_error_set(ret_error, errno, "create '%s': %m", m->quarantine_dir);
        m->archives_dir = config->evidence_archive_dir;
        if (r >= 0 && mkdir(m->archives_dir, 0700) < 0 && errno != EEXIST)
                r = seat_error_set(ret_error, errno, "create '%s': %m", m->archives_dir);
        if (r >= 0)
                r = load_evidence_keys(m, config, ret_error);
        if (r >= 0)
                r = warm_init(m, config, ret_error);
        if (r >= 0)
                r = uid_table_init(m, config, ret_error);
        if (r >= 0)
                r = domain_open(config->libvirt_uri, &m->conn, ret_error);
        if (r >= 0)
                r = seatnet_manager_new(config, on_net_tamper, m, &m->net, ret_error);
        if (r >= 0)
                r = seatnet_ensure_standby(m->net, m->conn, ret_error);
        if (r < 0) {
                seat_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

SeatManager *seat_manager_free(SeatManager *m) {
        if (!m)
                return NULL;
        /* Seats keep running: a restarted seatd adopts them. Their states being made are
         * finished (or dropped when not begun); old machines' destroys are waited for. */
        for (size_t i = 0; i < m->n_seats; i++) {
                prep_stop(m, m->seats[i]); /* (no job runs any more: the server has stopped) */
                identity_join(m->seats[i], 0);
                identity_join(m->seats[i], 1);
        }
        for (size_t i = 0; i < m->n_seats; i++)
                seat_unref(m->seats[i]);
        free(m->seats);
        m->net = seatnet_manager_free(m->net);
        if (m->conn)
                virConnectClose(m->conn);
        free(m->seats_dir);
        free(m->quarantine_dir);
        free(m->warm_dir);
        free(m->uid_slot_used);
        sodium_memzero(m->warm_key, sizeof(m->warm_key));
        pthread_mutex_destroy(&m->prep_lock);
        pthread_cond_destroy(&m->prep_cond);
        seat_secret_key_free(m->host_key);
        pthread_mutex_destroy(&m->lock);
        pthread_mutex_destroy(&m->conn_lock);
        free(m);
        return NULL;
}

/* Whether a seatd-* domain is one this seatd made: its disk is an overlay in our seats
 * directory. Another seatd on the same libvirtd (a test's, a second instance) keeps its own. */
static bool domain_is_ours(SeatManager *m, virDomainPtr dom) {
        const char *name = virDomainGetName(dom);
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, 0), *want = NULL, *warm = NULL;
        if (!xml || !name || strlen(name) <= strlen(SEAT_DOMAIN_PREFIX) ||
            asprintf(&want, "<source file='%s/", m->seats_dir) < 0 || asprintf(&warm, "<source file='%s/", m->warm_dir) < 0)
                return false;
        /* (a machine booting to be saved for warm resets runs from the warm directory) */
        return strstr(xml, want) != NULL || strstr(xml, warm) != NULL;
}

/* The evolving audit key died with the old seatd, by design: that segment ends there
 * (it reads as cut off) and is kept; the rest of the session goes to a new segment. */
static void continue_session_after_restart(SeatManager *m, Seat *s) {
        _cleanup_free_ char *al = NULL, *ak = NULL, *pl = NULL, *pk = NULL;
        _cleanup_error_ SeatError *err = NULL;
        long long t = (long long) time(NULL);
        if (audit_paths(s, &al, &ak) < 0 ||
            asprintf(&pl, "%s/audit-g%" PRId64 "-pre-%lld.log", s->dir, s->rec.generation, t) < 0 ||
            asprintf(&pk, "%s/audit-g%" PRId64 "-pre-%lld.key", s->dir, s->rec.generation, t) < 0)
                return;
        (void) rename(al, pl);
        (void) rename(ak, pk);
        if (session_open(m, s, &err) < 0)
                log_seat_warning(s->rec.id, "seat '%s': no audit log after the restart: %s", s->rec.id,
                                 err ? err->message : "?");
        else
                (void) seat_audit(s, "restart", NULL);
}

/* An adopted seat's disk counts against the free space as before the restart. */
static void adopt_disk(SeatManager *m, Seat *s) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        _cleanup_free_ char *base = NULL;
        if (image_store_get(m->store, s->rec.image, &man, NULL) < 0)
                return;
        pthread_mutex_lock(&m->lock);
        s->memory_mib = man->memory_mib > 0 ? (uint64_t) man->memory_mib : 0;
        pthread_mutex_unlock(&m->lock);
        for (size_t i = 0; i < man->n_files; i++)
                if (man->files[i].role == IMAGE_ROLE_DISK && (base = image_store_blob_path(m->store, &man->files[i])) &&
                    image_disk_virtual_size(man->files[i].format, base, &s->disk_virtual) >= 0)
                        return;
}

/* The network as the seat was made: its subnet, its saved profile, the rules put back. */
static int adopt_net(SeatManager *m, Seat *s, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        SeatNet *n = NULL;
        if (s->rec.net_index < 0 || !m->config->network)
                return 0;
        if (!(path = egress_saved_path(s)))
                return -ENOMEM;
        int r = read_file_capped(path, 64 * 1024, &text, NULL);
        if (r < 0)
                return seat_error_set(ret_error, -r, "the saved egress profile '%s': %s", path, strerror(-r));
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        r = seatnet_up(m->net, c, s->rec.id, s->rec.egress, (int) s->rec.net_index, text, &n, ret_error);
        virConnectClose(c);
        if (r < 0)
                return r;
        pthread_mutex_lock(&m->lock);
        s->net = n;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

/* Its uid pair back in the table. A seat from before per-seat uids (libvirt's one QEMU
 * user) gets a pair now: its standby state and its next machines run under it. */
static int adopt_uids(SeatManager *m, Seat *s, SeatError **ret_error) {
        if (s->rec.qemu_uid == 0) {
                int r = seat_uid_take(m, s, ret_error);
                return r < 0 ? r : domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (seat_uid_adopt(m, s) < 0)
                return seat_error_set(ret_error, EBUSY, "its QEMU uid %" PRId64 " is recorded for another seat too",
                                      s->rec.qemu_uid);
        return 0;
}

static int adopt_one(SeatManager *m, virDomainPtr dom) {
        SeatRecord rec = {};
        const char *name = virDomainGetName(dom);
        _cleanup_error_ SeatError *err = NULL;

        if (!domain_is_ours(m, dom)) {
                log_debug("leaving domain '%s' alone: it is not one of this seatd's seats", name);
                virDomainFree(dom);
                return 0;
        }
        char expected[64] = "";
        if (domain_get_record(dom, &rec) >= 0)
                seat_domain_name(&rec, expected, sizeof(expected));
        if (!expected[0] || strcmp(rec.state, "ready") != 0 || strcmp(name, expected) != 0) {
                /* Half-made (provisioning, resetting) or not ours to trust: remove it. */
                log_seat_warning(rec.id[0] ? rec.id : "?", "removing orphaned domain '%s' (state '%s')", name,
                                 rec.state);
                (void) domain_stop(dom);
                virDomainFree(dom);
                return 0;
        }
        Seat *s = calloc(1, sizeof(*s));
        if (!s) {
                virDomainFree(dom);
                return -ENOMEM;
        }
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->ticket_lock, NULL);
        pthread_mutex_init(&s->audit_lock, NULL);
        pthread_mutex_init(&s->warm_lock, NULL);
        pthread_mutex_init(&s->view_lock, NULL);
        s->m = m;
        s->refs = 0;
        s->uid_slot[0] = s->uid_slot[1] = -1;
        s->rec = rec;
        s->dom = dom;
        (void) snprintf(s->live_domain, sizeof(s->live_domain), "%s", name);
        seat_set_state(s, SEAT_READY);
        if (seat_paths(m, s) < 0 || adopt_uids(m, s, &err) < 0 || adopt_net(m, s, &err) < 0 ||
            connect_agent(s, false, ADOPT_HELLO_TIMEOUT_MS, &err) < 0 || table_add(m, s) < 0) {
                log_seat_warning(rec.id, "seat '%s' is not healthy (%s): removing it", rec.id,
                                 err ? err->message : "?");
                /* Its files are a participant's session: the sweep sets them aside, never deletes them. */
                s->agent = agent_client_free(s->agent);
                (void) domain_stop(s->dom);
                seat_net_down(m, s);
                seat_free(s);
                return 0;
        }
        adopt_disk(m, s);
        if (rec.pooled) {
                /* Nobody ever had its token: back to its pool. */
                pthread_mutex_lock(&m->lock);
                s->pooled = true;
                s->pool_seq = ++m->pool_seq;
                pthread_mutex_unlock(&m->lock);
        }
        continue_session_after_restart(m, s);
        set_reset_mode(s, "unknown", "adopted after a seatd restart");
        pthread_mutex_lock(&s->lock);
        seat_view_publish(s); /* its paths and disk, found after its state was set */
        prep_start(m, s);
        pthread_mutex_unlock(&s->lock);
        log_seat_notice(rec.id, "adopted seat '%s' (image '%s', participant '%s')", rec.id, rec.image, rec.participant);
        return 0;
}

static void sweep_orphan_dirs(SeatManager *m) {
        DIR *d = opendir(m->seats_dir);
        struct dirent *de;
        if (!d)
                return;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, de->d_name);
                if (s)
                        continue;
                _cleanup_free_ char *dir = NULL, *q = NULL;
                virConnectPtr c = manager_conn(m, NULL);
                seatnet_remove_orphan(m->net, c, de->d_name);
                if (c)
                        virConnectClose(c);
                if (asprintf(&dir, "%s/%s", m->seats_dir, de->d_name) < 0 ||
                    asprintf(&q, "%s/%s-orphan-%lld", m->quarantine_dir, de->d_name, (long long) time(NULL)) < 0)
                        break;
                /* Half-made or unhealthy: set aside whole for evidence, never reused, never
                 * silently deleted (the same filesystem: a rename). */
                log_seat_warning(de->d_name, "setting aside orphaned seat directory '%s' in '%s'", dir, q);
                if (rename(dir, q) < 0) {
                        log_seat_warning(de->d_name, "cannot set aside '%s': %m", dir);
                        continue;
                }
                (void) rmdir(q); /* only when nothing was in it */
        }
        closedir(d);
}

/* Saved states of slots that are gone: nothing of them is evidence (no participant ever
 * used them), so they are deleted. */
static void sweep_warm_dirs(SeatManager *m) {
        DIR *d = opendir(m->warm_dir);
        struct dirent *de;
        if (!d)
                return;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, de->d_name);
                if (s)
                        continue;
                for (int k = 0; k < 2; k++) {
                        _cleanup_(warm_paths_done) WarmPaths wp = {};
                        if (warm_paths(m, de->d_name, k, &wp) >= 0) {
                                warm_remove(&wp);
                                (void) rmdir(wp.dir);
                        }
                }
                log_seat_info(de->d_name, "removed the saved states of seat slot '%s' (no such seat)", de->d_name);
        }
        closedir(d);
}

/* ---- evidence still to seal ---- */

/* The seat id of a quarantine directory named "<id>-g<generation>-<time>" (NULL: not one). */
static char *quarantine_seat_id(const char *name) {
        const char *g = strstr(name, "-g");
        return g && g > name && g[2] >= '0' && g[2] <= '9' ? strndup(name, (size_t) (g - name)) : NULL;
}

/* Sessions a dead seatd left unsealed (killed while sealing, or sealing had failed): sealed
 * again now; a failure faults their seat as it would have then. */
static void resume_pending_seals(SeatManager *m) {
        DIR *d = opendir(m->archives_dir);
        struct dirent *de;
        /* An archive being written when seatd died: never valid (only a finished one is
         * renamed into place); its session is sealed again below. */
        while (d && (de = readdir(d)))
                if (de->d_name[0] == '.' && strstr(de->d_name, ".tmp-") && de->d_type == DT_REG &&
                    unlinkat(dirfd(d), de->d_name, 0) == 0)
                        log_notice("removed '%s/%s', an archive an earlier seatd did not finish", m->archives_dir, de->d_name);
        if (d)
                closedir(d);
        d = opendir(m->quarantine_dir);
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *id = quarantine_seat_id(de->d_name), *dir = NULL;
                if (!id || asprintf(&dir, "%s/%s", m->quarantine_dir, de->d_name) < 0 || !seal_dir_is_pending(dir))
                        continue;
                _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, id);
                log_seat_notice(id, "sealing the session left in '%s' by an earlier seatd", dir);
                seal_dir_in_background(m, s, id, TAKE_PTR(dir));
        }
        if (d)
                closedir(d);
}

const char *seat_manager_archives_dir(SeatManager *m) {
        return m->archives_dir;
}

const char *seat_manager_quarantine_dir(SeatManager *m) {
        return m->quarantine_dir;
}

void seat_manager_host_public_key(SeatManager *m, SeatPublicKey *ret) {
        seat_secret_key_public(m->host_key, ret);
}

/* The seat's sealing failed and everything is stored now: a seat FAULTED for that alone,
 * whose machine still answers, is READY again; any other fault stays. */
static void seat_seal_recovered(Seat *s) {
        pthread_mutex_lock(&s->lock);
        free(s->seal_fault);
        s->seal_fault = NULL;
        if (seat_state(s) == SEAT_FAULTED && s->fault && s->agent && s->dom &&
            !strncmp(s->fault, "the evidence of an earlier session", 34)) {
                free(s->fault);
                s->fault = NULL;
                seat_set_state(s, SEAT_READY);
                (void) domain_set_record(s->dom, &s->rec, NULL);
                log_seat_notice(s->rec.id, "seat '%s' is ready again: its evidence is sealed", s->rec.id);
        }
        seat_view_publish(s);
        pthread_mutex_unlock(&s->lock);
}

int seat_evidence_retry(SeatManager *m, const char *seat_id, json_object **ret_result, SeatError **ret_error) {
        _cleanup_json_ json_object *res = json_object_new_object();
        json_object *sealed = json_object_new_array();
        SealContext ctx = seal_context(m);
        int first = 0;
        if (!res || !sealed) {
                json_object_put(sealed);
                return -ENOMEM;
        }
        json_object_object_add(res, "sealed", sealed);
        if (!m->have_facilitator)
                return seat_error_set(ret_error, EINVAL, "no facilitator_key in seatd.conf: nothing can be sealed");
        DIR *d = opendir(m->quarantine_dir);
        if (!d)
                return seat_error_set(ret_error, errno, "cannot list '%s': %m", m->quarantine_dir);
        struct dirent *de;
        while ((de = readdir(d))) {
                _cleanup_free_ char *id = quarantine_seat_id(de->d_name), *dir = NULL, *archive = NULL;
                _cleanup_error_ SeatError *err = NULL;
                if (!id || (seat_id && strcmp(id, seat_id)) || asprintf(&dir, "%s/%s", m->quarantine_dir, de->d_name) < 0 ||
                    !seal_dir_is_pending(dir))
                        continue;
                int r = seal_session_dir(&ctx, id, dir, &archive, &err);
                if (r >= 0) {
                        log_seat_notice(id, "sealed the session of seat '%s' left in '%s' into '%s'", id, dir, archive);
                        json_object_array_add(sealed, json_object_new_string(archive));
                        continue;
                }
                log_seat_error(id, "cannot seal the session of seat '%s' in '%s': %s", id, dir,
                               err ? err->message : strerror(-r));
                if (first == 0) {
                        first = r;
                        seat_error_set(ret_error, r == -EBUSY ? EBUSY : -r, "%s%s", err ? err->message : strerror(-r),
                                       r == -EBUSY ? ": try again when it is done" : "");
                }
        }
        closedir(d);
        if (first < 0)
                return first;
        if (seat_id) {
                _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, seat_id);
                if (s) {
                        seat_seal_recovered(s);
                        json_object *o = NULL;
                        if (seat_to_json(s, &o) >= 0)
                                json_object_object_add(res, "seat", o);
                }
        }
        *ret_result = TAKE_PTR(res);
        return 0;
}

int seat_manager_adopt(SeatManager *m, SeatError **ret_error) {
        virDomainPtr *doms = NULL;
        size_t n = 0;
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        int r = domain_list_seats(c, &doms, &n);
        virConnectClose(c);
        if (r < 0)
                return seat_error_set(ret_error, EIO, "list libvirt domains: %s", domain_last_error());
        for (size_t i = 0; i < n; i++)
                (void) adopt_one(m, doms[i]);
        free(doms);
        sweep_orphan_dirs(m);
        sweep_warm_dirs(m);
        resume_pending_seals(m);
        return 0;
}
