/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat.c: the seat table, states and tokens; provision, reset and release; tamper records; the manager. */
#include "seat-internal.h"

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

SeatState seat_state(Seat *s) {
        return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

/* Under s->lock (or before s is shared). Every transition publishes what status shows. */
void seat_set_state(Seat *s, SeatState st) {
        __atomic_store_n(&s->state, st, __ATOMIC_RELEASE);
        snprintf(s->rec.state, sizeof(s->rec.state), "%s", state_names[st]);
        seat_view_publish(s);
}

void seat_free(Seat *s) {
        seat_uid_release(s->m, s);
        pthread_mutex_destroy(&s->warm_lock);
        audit_log_free(s->audit);
        seat_capture_stop(s->m, s); /* seatd stops: its counters saved for the next one */
        /* Only the memory: a seat still running keeps its network for the next seatd. */
        seatnet_forget(s->m->net, s->net);
        json_object_put(s->last_tamper);
        pthread_mutex_destroy(&s->audit_lock);
        strv_free(s->evidence_paths);
        agent_client_free(s->agent);
        if (s->dom)
                virDomainFree(s->dom);
        seat_view_done(&s->view);
        pthread_mutex_destroy(&s->view_lock);
        pthread_mutex_destroy(&s->ticket_lock);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->calls_done);
        FREE_MANY(s->reset_mode, s->reset_reason, s->progress, s->warm_standby, s->teardown_fault, s->seal_fault,
                  s->evidence_fs, s->dir, s->overlay, s->console_log, s->fault, s);
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

int seat_table_add(SeatManager *m, Seat *s) {
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

static void seat_table_remove(SeatManager *m, Seat *s) {
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

void random_hex(char *out, size_t bytes) {
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
int ticket_check(Seat *s, const SeatTicket *t, SeatError **ret_error) {
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
int new_token(Seat *s, bool next_generation, char **ret) {
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
int seat_paths(SeatManager *m, Seat *s) {
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
virConnectPtr manager_conn(SeatManager *m, SeatError **ret_error) {
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
int seat_identity(int64_t generation) {
        return generation % 2 ? 0 : 1;
}

void identity_domain_name(const char *id, SeatIdentity k, char *buf, size_t size) {
        snprintf(buf, size, SEAT_DOMAIN_PREFIX "%s-g%d", id, k + 1);
}

void seat_domain_name(const SeatRecord *rec, char *buf, size_t size) {
        identity_domain_name(rec->id, seat_identity(rec->generation), buf, size);
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

void set_live_domain(SeatManager *m, Seat *s, const char *name) {
        pthread_mutex_lock(&m->lock);
        (void) snprintf(s->live_domain, sizeof(s->live_domain), "%s", name);
        pthread_mutex_unlock(&m->lock);
}

/* A new domain on a new overlay of the verified base (cold boot), with iface as its NIC. */
int start_fresh(SeatManager *m, const ImageManifest *man, bool kvm, const char *name, const char *overlay,
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
        seat_capture_remove(s->m, s);
        _cleanup_free_ char *al = NULL, *ak = NULL;
        if (s->dir && audit_paths(s, &al, &ak) >= 0) {
                (void) unlink(al);
                (void) unlink(ak);
        }
        seat_net_down(s->m, s);
        if (s->dir)
                (void) rmdir(s->dir);
}

/* ---- transitions ---- */

/* A provisioned and an adopted seat start from the same zeroed seat with its locks. */
Seat *seat_new(SeatManager *m, unsigned refs) {
        Seat *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->calls_done, NULL);
        pthread_mutex_init(&s->ticket_lock, NULL);
        pthread_mutex_init(&s->audit_lock, NULL);
        pthread_mutex_init(&s->warm_lock, NULL);
        pthread_mutex_init(&s->view_lock, NULL);
        s->m = m;
        s->refs = refs;
        s->uid_slot[0] = s->uid_slot[1] = -1;
        return s;
}


/* A seat booting new counts against the host's limit from its admission on, not only once
 * it is in the table, which takes a whole boot: otherwise every provision started during
 * that boot would see the same free place and all of them would boot. -EDQUOT (not the
 * disk admission's -ENOSPC): the pools' refill takes it as "held", not as a failed boot. */
static int boot_admit(SeatManager *m, bool capped, SeatError **ret_error) {
        long cap = m->config ? m->config->pool_max_seats : 0;
        pthread_mutex_lock(&m->lock);
        unsigned seats = (unsigned) m->n_seats + m->booting;
        if (capped && cap > 0 && (long) seats + 1 > cap) {
                pthread_mutex_unlock(&m->lock);
                return seat_error_set(ret_error, EDQUOT,
                                      "the host runs %u seats (booting ones included) and pool_max_seats is %ld (seatd.conf): the dashboard and the pools boot no more; an operator can (seatctl provision)",
                                      seats, cap);
        }
        m->booting++;
        pthread_mutex_unlock(&m->lock);
        return 0;
}

static void boot_admitted_done(SeatManager **m) {
        if (!*m)
                return;
        pthread_mutex_lock(&(*m)->lock);
        (*m)->booting--;
        pthread_mutex_unlock(&(*m)->lock);
}

/* A new seat, booted cold. pooled: for a pool, nobody's (its token is never handed out). */
int provision_new(SeatManager *m, const char *image, const char *participant, const char *egress, bool pooled, bool capped,
                  Seat **ret, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        r = boot_admit(m, capped, ret_error);
        if (r < 0)
                return r;
        /* Until the end of this function: once the seat is in the table it is counted there
         * (for that moment twice, which only errs on the safe side). */
        _cleanup_(boot_admitted_done) SeatManager *admitted = m;
        Seat *s = seat_new(m, 1);
        if (!s)
                return -ENOMEM;
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
                r = seat_capture_start(m, s, ret_error); /* before the machine is on the bridge */
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
                r = seat_table_add(m, s);
        disk_settle(m, s);
        if (r >= 0)
                warm_state_make_start(m, s);
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

void seat_fault(Seat *s, const char *why) {
        free(s->fault);
        s->fault = strdup(why);
        seat_set_state(s, SEAT_FAULTED); /* publishes the fault with the state */
        if (s->dom)
                (void) domain_set_record(s->dom, &s->rec, NULL);
        log_seat_warning(s->rec.id, "seat '%s' faulted: %s", s->rec.id, why);
}

int seat_provision(SeatManager *m, const char *image, const char *participant, const char *egress, bool capped,
                   Seat **ret, char **ret_token, SeatError **ret_error) {
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
        return provision_new(m, image, participant, egress, false, capped, ret, ret_token, ret_error);
}

#define SESSION_END_GRACE_MS 3000 /* for the old guest to sync its disk and power off */

/* Reset and release take the seat from whatever runs in it: a running exec sees this
 * within 250 ms (agent_client_exec_cancellable() asks that often), has its process group
 * killed in the guest and leaves; calls arriving meanwhile are refused. Returns with the
 * lock held and no call running: the agent and the machine are the caller's now. */
static void lock_preempting(Seat *s) {
        __atomic_add_fetch(&s->preempting, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_lock(&s->lock);
        while (__atomic_load_n(&s->calls, __ATOMIC_ACQUIRE) > 0)
                pthread_cond_wait(&s->calls_done, &s->lock);
        __atomic_sub_fetch(&s->preempting, 1, __ATOMIC_ACQ_REL);
}

bool preempted(Seat *s) {
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

int seat_reset(SeatManager *m, Seat *s, bool cold, json_object *control, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        lock_preempting(s);
        /* Held to the end: each of the early returns below unlocks through the guard. */
        _cleanup_(pthread_mutex_unlockp) pthread_mutex_t *held = &s->lock;
        SeatState st = seat_state(s);
        if (st != SEAT_READY && st != SEAT_FAULTED)
                return seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(st));
        if (seat_pooled(s)) {
                /* Its token would reach the operator: a pooled seat is nobody's. */
                return seat_error_set(ret_error, EBUSY,
                                      "seat '%s' is kept ready in the pool of image '%s': it is handed out by provision; shrink the pool ('seatctl pool set') or release it",
                                      s->rec.id, s->rec.image);
        }
        if (s->seal_fault) {
                return seat_error_set(ret_error, EBUSY,
                                      "seat '%s' is not reset while the evidence of an earlier session is not sealed (%s): fix that (e.g. free disk space), then 'seatctl evidence retry %s'",
                                      s->rec.id, s->seal_fault, s->rec.id);
        }
        r = seat_refresh_dom(m, s, ret_error);
        if (r < 0)
                return r;
        if (control)
                (void) seat_audit(s, "control", control);
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
        r = session_quarantine(m, s, &qdir, ret_error);
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
        /* The new session's capture, in files of its own, before its machine is on the
         * bridge (the old one's stopped in session_close(), after the old machine left). */
        if (r >= 0)
                r = seat_capture_start(m, s, ret_error);
        if (r >= 0) {
                /* The new identity: its saved state finished (or dropped when not begun), its
                 * previous machine gone. */
                warm_state_make_stop(m, s);
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
                return r;
        }
        free(s->fault);
        s->fault = NULL;
        seat_view_publish(s);
        log_seat_notice(s->rec.id, "seat '%s' reset (%s%s%s): generation %" PRId64, s->rec.id, s->reset_mode,
                        s->reset_reason ? ": " : "", s->reset_reason ? s->reset_reason : "", s->rec.generation);
        warm_state_make_start(m, s);
        *ret_token = TAKE_PTR(token);
        return 0;
}

int seat_release(SeatManager *m, Seat *s, json_object *control, SeatError **ret_error) {
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
        if (control)
                (void) seat_audit(s, "control", control);
        int grace = end_session_in_guest(s, seat_state(s) == SEAT_READY);
        s->agent = agent_client_free(s->agent);
        if (s->dom) {
                (void) domain_stop_after(s->dom, grace);
                virDomainFree(s->dom);
                s->dom = NULL;
        }
        warm_state_make_stop(m, s);
        warm_forget(m, s);
        session_close(s);
        char *qdir = NULL;
        r = session_quarantine(m, s, &qdir, ret_error);
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
        seat_table_remove(m, s);
        if (r >= 0)
                log_seat_notice(s->rec.id, "seat '%s' released", s->rec.id);
        /* A pool's seat or the host's room for one changed. */
        pool_notify(m, was_pooled ? SEAT_POOL_BROKEN : SEAT_POOL_CHANGED, s->rec.image, s->rec.egress);
        return r;
}

/* ---- egress tampering ---- */

void tamper_record(SeatManager *m, Seat *s, NftSeatState st, int64_t detected, int64_t paused, bool ok_pause,
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

int seat_manager_new(const SeatConfig *config, ImageStore *store, SeatManager **ret, SeatError **ret_error) {
        SeatManager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->conn_lock, NULL);
        pthread_mutex_init(&m->warm_make_lock, NULL);
        pthread_cond_init(&m->warm_make_cond, NULL);
        if (changes_init(&m->changes) < 0) {
                free(m);
                return -ENOMEM;
        }
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
                seatnet_set_guard_fn(m->net, on_guard_failed, m);
        if (r >= 0)
                deny_summary_start(m);
        if (r >= 0)
                r = seatnet_ensure_standby(m->net, m->conn, ret_error);
        if (r < 0) {
                seat_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

Changes *seat_manager_changes(SeatManager *m) {
        return &m->changes;
}

Metrics *seat_manager_metrics(SeatManager *m) {
        return &m->metrics;
}

SeatManager *seat_manager_free(SeatManager *m) {
        if (!m)
                return NULL;
        /* What the seats tried to reach, into their logs while they are open. */
        m->deny = deny_summary_free(m->deny);
        /* Seats keep running: a restarted seatd adopts them. Their states being made are
         * finished (or dropped when not begun); old machines' destroys are waited for. */
        for (size_t i = 0; i < m->n_seats; i++) {
                warm_state_make_stop(m, m->seats[i]); /* (no job runs any more: the server has stopped) */
                identity_join(m->seats[i], 0);
                identity_join(m->seats[i], 1);
        }
        for (size_t i = 0; i < m->n_seats; i++)
                seat_unref(m->seats[i]);
        free(m->seats);
        m->net = seatnet_manager_free(m->net);
        if (m->conn)
                virConnectClose(m->conn);
        FREE_MANY(m->seats_dir, m->quarantine_dir, m->warm_dir, m->uid_slot_used);
        sodium_memzero(m->warm_key, sizeof(m->warm_key));
        pthread_mutex_destroy(&m->warm_make_lock);
        pthread_cond_destroy(&m->warm_make_cond);
        seat_secret_key_free(m->host_key);
        pthread_mutex_destroy(&m->lock);
        pthread_mutex_destroy(&m->conn_lock);
        changes_done(&m->changes);
        return mfree(m);
}
