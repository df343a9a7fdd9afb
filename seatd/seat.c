/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "hash.h"
#include "jsonframe.h"
#include "log.h"
#include "seat.h"
#include "archive.h"
#include "audit.h"
#include "boxkey.h"
#include "minisign.h"
#include "seal.h"

#define AGENT_BOOT_TIMEOUT_KVM_MS 60000
#define AGENT_BOOT_TIMEOUT_TCG_MS 180000
#define AGENT_CALL_TIMEOUT_MS 30000
#define ADOPT_HELLO_TIMEOUT_MS 20000
#define PARTICIPANT_MAX 64

struct Seat {
        unsigned refs;            /* under the manager's lock */
        pthread_mutex_t lock;     /* one operation at a time */
        SeatManager *m;
        SeatRecord rec;
        SeatState state;
        char *dir, *overlay, *console_log;
        virDomainPtr dom;
        AgentClient *agent;
        char *fault;
        AuditLog *audit;          /* this session's tool calls and events */
        char *seal_fault;         /* the last session's evidence could not be sealed */
        char **evidence_paths;    /* the image's evidence_paths for this session (NULL: unknown) */
        char *evidence_fs;        /* and the filesystem holding them (guest_init's), or NULL */
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

const char *seat_console_path(const Seat *s) {
        return s->console_log;
}

SeatState seat_state(Seat *s) {
        return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static void seat_set_state(Seat *s, SeatState st) {
        __atomic_store_n(&s->state, st, __ATOMIC_RELEASE);
        snprintf(s->rec.state, sizeof(s->rec.state), "%s", state_names[st]);
}

/* ---- the table ---- */

static void seat_free(Seat *s) {
        audit_log_free(s->audit);
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

bool seat_token_matches(Seat *s, const char *token) {
        char h[65];
        if (!token || strlen(token) != SEAT_TOKEN_HEX || token_hash_hex(token, h) < 0)
                return false;
        return sodium_memcmp(h, s->rec.token_hash, 64) == 0;
}

static int new_token(Seat *s, char **ret) {
        char *t = malloc(SEAT_TOKEN_HEX + 1);
        if (!t)
                return -ENOMEM;
        random_hex(t, SEAT_TOKEN_HEX / 2);
        int r = token_hash_hex(t, s->rec.token_hash);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

static bool participant_valid(const char *p) {
        size_t n = strlen(p);
        return n <= PARTICIPANT_MAX &&
               strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@._+- ") == n;
}

static int seat_paths(SeatManager *m, Seat *s) {
        free(s->dir);
        free(s->overlay);
        free(s->console_log);
        s->dir = s->overlay = s->console_log = NULL;
        if (asprintf(&s->dir, "%s/%s", m->seats_dir, s->rec.id) < 0 ||
            asprintf(&s->overlay, "%s/overlay-g%" PRId64 ".qcow2", s->dir, s->rec.generation) < 0 ||
            asprintf(&s->console_log, "%s/console-g%" PRId64 ".log", s->dir, s->rec.generation) < 0)
                return -ENOMEM;
        return 0;
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

/* A seat's domain is named per generation: a reset starts the new machine while libvirt
 * is still finishing the old one's destroy (1-2 s here), under a name of its own. */
static void seat_domain_name(const SeatRecord *rec, char *buf, size_t size) {
        snprintf(buf, size, SEAT_DOMAIN_PREFIX "%s-g%" PRId64, rec->id, rec->generation);
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

static int build_spec_and_start(SeatManager *m, Seat *s, const ImageManifest *man, bool kvm, SeatError **ret_error) {
        _cleanup_free_ char *kernel = NULL, *initrd = NULL, *base = NULL;
        char name[64];
        const ImageFile *disk = NULL;

        for (size_t i = 0; i < man->n_files && !disk; i++)
                if (man->files[i].role == IMAGE_ROLE_DISK)
                        disk = &man->files[i];
        if (man->kernel && !(kernel = image_store_blob_path(m->store, image_manifest_find_file(man, man->kernel))))
                return -ENOMEM;
        if (man->initrd && !(initrd = image_store_blob_path(m->store, image_manifest_find_file(man, man->initrd))))
                return -ENOMEM;
        if (!disk || !(base = image_store_blob_path(m->store, disk)))
                return -ENOMEM;

        int r = overlay_create(base, image_format_to_string(disk->format), s->overlay, ret_error);
        if (r < 0)
                return r;
        seat_domain_name(&s->rec, name, sizeof(name));
        DomainSpec spec = { .name = name, .kvm = kvm, .manifest = man, .kernel = kernel, .initrd = initrd,
                            .base = base, .overlay = s->overlay, .console_log = s->console_log, .record = &s->rec };
        virConnectPtr c = manager_conn(m, ret_error);
        if (!c)
                return -ECONNREFUSED;
        r = domain_create(c, &spec, &s->dom, ret_error);
        virConnectClose(c);
        return r;
}

static int connect_agent(Seat *s, int timeout_ms, SeatError **ret_error) {
        _cleanup_free_ char *sock = NULL;
        _cleanup_agent_msg_ AgentMsg *hello = NULL;
        int r = domain_agent_socket(s->dom, &sock);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s' has no agent channel", s->rec.id);
        s->agent = agent_client_free(s->agent);
        r = agent_client_connect_unix(sock, timeout_ms, &s->agent, ret_error);
        if (r >= 0)
                r = agent_client_hello(s->agent, timeout_ms, &hello, ret_error);
        if (r < 0)
                return seat_error_wrap(ret_error, "seat '%s': guest-init did not come up", s->rec.id);
        return 0;
}

/* A new identity for whoever sits down next: hostname, machine id, fresh RNG entropy. */
static int configure_identity(Seat *s, SeatError **ret_error) {
        char hostname[64], machine_id[33];
        uint8_t entropy[64];
        snprintf(hostname, sizeof(hostname), "seat-%s", s->rec.id);
        random_hex(machine_id, 16);
        randombytes_buf(entropy, sizeof(entropy));
        AgentMsg req = { .type = AGENT_MSG_CONFIGURE,
                         .configure = { .hostname = hostname, .seat_id = s->rec.id, .machine_id = machine_id,
                                        .entropy = entropy, .entropy_len = sizeof(entropy) } };
        int r = agent_client_call(s->agent, &req, AGENT_CALL_TIMEOUT_MS, NULL, ret_error);
        sodium_memzero(entropy, sizeof(entropy));
        return r < 0 ? seat_error_wrap(ret_error, "configure seat '%s'", s->rec.id) : 0;
}

static int audit_paths(const Seat *s, char **ret_log, char **ret_key);

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
                        log_warning("seat '%s': the image version of this session is not in the store any more: its guest files are not taken for evidence",
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
        if (rename(s->console_log, c) < 0 && errno != ENOENT)
                return seat_error_set(ret_error, errno, "set aside the console log of seat '%s': %m", s->rec.id);
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
        if (r >= 0)
                r = audit_log_open(log_path, key, 0, &s->audit, ret_error);
        sodium_memzero(key, sizeof(key));
        if (r < 0)
                return seat_error_set(ret_error, -r, "open the audit log of seat '%s': %s", s->rec.id, strerror(-r));
        json_object *o = json_object_new_object();
        json_object_object_add(o, "seat", json_object_new_string(s->rec.id));
        json_object_object_add(o, "generation", json_object_new_int64(s->rec.generation));
        json_object_object_add(o, "image", json_object_new_string(s->rec.image));
        json_object_object_add(o, "image_version", json_object_new_int64(s->rec.image_version));
        json_object_object_add(o, "image_digest", json_object_new_string(s->rec.image_digest));
        json_object_object_add(o, "participant", json_object_new_string(s->rec.participant));
        r = audit_log_append(s->audit, "session", o, ret_error);
        json_object_put(o);
        return r;
}

static void session_close(Seat *s) {
        _cleanup_error_ SeatError *err = NULL;
        if (s->audit && audit_log_close(s->audit, &err) < 0)
                log_warning("closing the audit log of seat '%s': %s", s->rec.id, err ? err->message : "?");
        s->audit = NULL;
}

static int seat_audit_locked(Seat *s, const char *type, json_object *data) {
        _cleanup_json_ json_object *empty = data ? NULL : json_object_new_object();
        return s->audit ? audit_log_append(s->audit, type, data ? data : empty, NULL) : 0;
}

int seat_audit(Seat *s, const char *type, json_object *data) {
        _cleanup_error_ SeatError *err = NULL;
        int r = 0;
        pthread_mutex_lock(&s->lock);
        if (s->audit && (r = audit_log_append(s->audit, type, data, &err)) < 0)
                log_error("seat '%s': cannot append to the audit log: %s", s->rec.id, err ? err->message : "?");
        pthread_mutex_unlock(&s->lock);
        return r;
}

typedef struct SealJob {
        SeatManager *m;
        Seat *s;                  /* a reference, or NULL for a released seat */
        char *dir, *seat_id;
} SealJob;

static SealContext seal_context(SeatManager *m) {
        return (SealContext) { .config = m->config, .archives_dir = m->archives_dir, .host_key = m->host_key,
                               .facilitator = &m->facilitator };
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
        pthread_mutex_unlock(&s->lock);
}

/* Reset never waits for evidence: the session is sealed here, beside the next one, and
 * its quarantine deleted only once the archive is written and fsync'ed. */
static void *seal_thread(void *p) {
        SealJob *j = p;
        _cleanup_error_ SeatError *err = NULL;
        _cleanup_free_ char *archive = NULL;
        SealContext ctx = seal_context(j->m);
        int r = seal_session_dir(&ctx, j->dir, &archive, &err);
        if (r >= 0)
                log_notice("sealed a session of seat '%s' into '%s'", j->seat_id, archive);
        else if (r != -EBUSY) {
                const char *why = err ? err->message : strerror(-r);
                log_error("cannot seal the session of seat '%s' (kept in '%s'): %s", j->seat_id, j->dir, why);
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
                log_warning("the session of seat '%s' stays unsealed in '%s': set facilitator_key in seatd.conf", seat_id, dir);
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
                log_error("cannot start sealing the session of seat '%s': it stays in '%s'", seat_id, j->dir);
                if (s) { /* the caller holds s->lock, or s is not shared yet */
                        free(s->seal_fault);
                        s->seal_fault = strdup("seatd could not start a thread to seal it: seatctl evidence retry");
                }
                seal_job_free(j);
                return;
        }
        pthread_detach(t);
}

static void seal_in_background(SeatManager *m, Seat *s, bool keep_ref, char *dir) {
        seal_dir_in_background(m, keep_ref ? s : NULL, s->rec.id, dir);
}

/* Boot from the verified image and bring the agent up: provision's and reset's core. */
static int boot_seat(SeatManager *m, Seat *s, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        bool kvm = false;
        int r = seat_manager_accel(m, &kvm, ret_error);
        if (r < 0)
                return r;
        r = image_store_get(m->store, s->rec.image, &man, ret_error);
        if (r < 0)
                return r;
        if (s->rec.image_version != 0 && man->version != s->rec.image_version)
                log_info("seat '%s' moves from image version %" PRId64 " to %" PRId64, s->rec.id, s->rec.image_version,
                         man->version);
        s->rec.image_version = man->version;
        (void) digest_to_hex(man->digest, SEAT_HASH_BYTES, s->rec.image_digest, sizeof(s->rec.image_digest));
        if (remember_evidence_paths(s, man) < 0)
                return -ENOMEM;
        if (mkdir(s->dir, 0755) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create seat directory '%s': %m", s->dir);
        r = build_spec_and_start(m, s, man, kvm, ret_error);
        if (r < 0)
                return r;
        r = connect_agent(s, kvm ? AGENT_BOOT_TIMEOUT_KVM_MS : AGENT_BOOT_TIMEOUT_TCG_MS, ret_error);
        if (r < 0)
                return r;
        r = configure_identity(s, ret_error);
        if (r < 0)
                return r;
        return session_open(m, s, ret_error);
}

/* ---- transitions ---- */

int seat_provision(SeatManager *m, const char *image, const char *participant, Seat **ret, char **ret_token,
                   SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        if (!image_name_valid(image))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an image name", image);
        if (!participant_valid(participant))
                return seat_error_set(ret_error, EINVAL,
                                      "participant names are at most %d letters, digits, spaces and @._+-", PARTICIPANT_MAX);
        Seat *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->m = m;
        s->refs = 1;
        snprintf(s->rec.id, sizeof(s->rec.id), "s");
        random_hex(s->rec.id + 1, 4);
        snprintf(s->rec.image, sizeof(s->rec.image), "%s", image);
        snprintf(s->rec.participant, sizeof(s->rec.participant), "%s", participant);
        s->rec.generation = 1;
        s->rec.created = (int64_t) time(NULL);
        seat_set_state(s, SEAT_PROVISIONING);

        r = seat_paths(m, s);
        if (r >= 0)
                r = new_token(s, &token);
        if (r >= 0)
                r = boot_seat(m, s, ret_error);
        if (r >= 0) {
                seat_set_state(s, SEAT_READY);
                r = domain_set_record(s->dom, &s->rec, ret_error);
        }
        if (r >= 0)
                r = table_add(m, s);
        if (r < 0) {
                log_warning("provision of seat '%s' failed: %s", s->rec.id, *ret_error ? (*ret_error)->message : strerror(-r));
                seat_teardown(s);
                seat_free(s);
                return r;
        }
        log_notice("seat '%s' ready: image '%s' version %" PRId64 ", participant '%s'", s->rec.id, image,
                   s->rec.image_version, participant);
        *ret = s; /* the caller's reference */
        *ret_token = TAKE_PTR(token);
        return 0;
}

static void seat_fault(Seat *s, const char *why) {
        seat_set_state(s, SEAT_FAULTED);
        free(s->fault);
        s->fault = strdup(why);
        if (s->dom)
                (void) domain_set_record(s->dom, &s->rec, NULL);
        log_warning("seat '%s' faulted: %s", s->rec.id, why);
}

/* Returns NULL when the domain is gone, else a malloc'd reason. */
static void *destroy_thread(void *p) {
        virDomainPtr dom = p;
        int r = domain_stop(dom);
        char *why = r < 0 ? strdup(domain_last_error()) : NULL;
        if (r < 0 && !why)
                why = strdup("destroy failed");
        virDomainFree(dom);
        return why;
}

int seat_reset(SeatManager *m, Seat *s, char **ret_token, SeatError **ret_error) {
        _cleanup_free_ char *token = NULL;
        int r;

        pthread_mutex_lock(&s->lock);
        SeatState st = seat_state(s);
        if (st != SEAT_READY && st != SEAT_FAULTED) {
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(st));
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

        /* The old machine goes entirely: no byte of it is reused. Its destroy runs beside the
         * new boot (libvirt takes 1-2 s to confirm a QEMU that exits in milliseconds), and
         * the seat is not READY before that destroy has returned. */
        s->agent = agent_client_free(s->agent);
        pthread_t destroyer;
        bool destroying = false;
        if (s->dom) {
                virDomainPtr old = TAKE_PTR(s->dom);
                destroying = pthread_create(&destroyer, NULL, destroy_thread, old) == 0;
                if (!destroying) {
                        (void) domain_stop(old);
                        virDomainFree(old);
                }
        }
        session_close(s);
        char *qdir = NULL;
        r = quarantine(m, s, &qdir, ret_error);
        if (r >= 0) {
                /* The new generation's files have names of their own: the old machine's
                 * console may still be held open by virtlogd while its destroy completes. */
                s->rec.generation++;
                r = seat_paths(m, s);
        }
        if (r >= 0)
                r = new_token(s, &token);
        if (r >= 0)
                r = boot_seat(m, s, ret_error);
        if (destroying) {
                void *res = NULL;
                pthread_join(destroyer, &res);
                if (res && r >= 0)
                        r = seat_error_set(ret_error, EIO, "the old machine of seat '%s' could not be destroyed: %s",
                                           s->rec.id, (char *) res);
                free(res);
        }
        /* Only now: libguestfs reads the old overlay, which QEMU held until the destroy. */
        if (qdir)
                seal_in_background(m, s, true, TAKE_PTR(qdir));
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
        log_notice("seat '%s' reset: generation %" PRId64, s->rec.id, s->rec.generation);
        pthread_mutex_unlock(&s->lock);
        *ret_token = TAKE_PTR(token);
        return 0;
}

int seat_release(SeatManager *m, Seat *s, SeatError **ret_error) {
        pthread_mutex_lock(&s->lock);
        if (seat_state(s) == SEAT_RELEASED) {
                pthread_mutex_unlock(&s->lock);
                return seat_error_set(ret_error, ENOENT, "seat '%s' is released already", s->rec.id);
        }
        int r = seat_refresh_dom(m, s, ret_error);
        if (r < 0) {
                pthread_mutex_unlock(&s->lock);
                return r;
        }
        s->agent = agent_client_free(s->agent);
        if (s->dom) {
                (void) domain_stop(s->dom);
                virDomainFree(s->dom);
                s->dom = NULL;
        }
        session_close(s);
        char *qdir = NULL;
        r = quarantine(m, s, &qdir, ret_error);
        if (r >= 0)
                seal_in_background(m, s, false, qdir);
        (void) rmdir(s->dir);
        seat_set_state(s, SEAT_RELEASED);
        pthread_mutex_unlock(&s->lock);
        table_remove(m, s);
        if (r >= 0)
                log_notice("seat '%s' released", s->rec.id);
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

int seat_exec(Seat *s, AgentMsg *req, AgentOutputFn on_output, bool (*cancelled)(void *), void *userdata,
              int timeout_ms, AgentExecResult *ret, SeatError **ret_error) {
        pthread_mutex_lock(&s->lock);
        int r;
        if (seat_state(s) != SEAT_READY || !s->agent)
                r = seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        else {
                r = agent_client_exec_cancellable(s->agent, req, on_output, cancelled, userdata, timeout_ms, ret,
                                                  ret_error);
                if (r < 0 && r != -ECANCELED)
                        r = agent_failed(s, r, ret_error);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int seat_agent_call(Seat *s, AgentMsg *req, int timeout_ms, AgentMsg **ret_reply, SeatError **ret_error) {
        pthread_mutex_lock(&s->lock);
        int r;
        if (seat_state(s) != SEAT_READY || !s->agent)
                r = seat_error_set(ret_error, EBUSY, "seat '%s' is %s", s->rec.id, seat_state_to_string(seat_state(s)));
        else {
                r = agent_client_call(s->agent, req, timeout_ms, ret_reply, ret_error);
                if (r < 0 && r != -EREMOTEIO)
                        r = agent_failed(s, r, ret_error);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int seat_to_json(Seat *s, json_object **ret) {
        char created[32];
        json_object *o = json_object_new_object();
        if (!o || rfc3339_format(s->rec.created, created, sizeof(created)) < 0) {
                json_object_put(o);
                return -ENOMEM;
        }
        json_object_object_add(o, "id", json_object_new_string(s->rec.id));
        json_object_object_add(o, "state", json_object_new_string(seat_state_to_string(seat_state(s))));
        json_object_object_add(o, "image", json_object_new_string(s->rec.image));
        json_object_object_add(o, "image_version", json_object_new_int64(s->rec.image_version));
        json_object_object_add(o, "participant", json_object_new_string(s->rec.participant));
        json_object_object_add(o, "generation", json_object_new_int64(s->rec.generation));
        json_object_object_add(o, "created", json_object_new_string(created));
        json_object_object_add(o, "domain", json_object_new_string(s->dom ? virDomainGetName(s->dom) : ""));
        if (s->fault)
                json_object_object_add(o, "fault", json_object_new_string(s->fault));
        if (s->seal_fault)
                json_object_object_add(o, "evidence_fault", json_object_new_string(s->seal_fault));
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

int seat_manager_new(const SeatConfig *config, ImageStore *store, SeatManager **ret, SeatError **ret_error) {
        SeatManager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        pthread_mutex_init(&m->lock, NULL);
        pthread_mutex_init(&m->conn_lock, NULL);
        m->config = config;
        m->store = store;
        int r = sodium_init() < 0 ? -EIO : 0;
        if (r >= 0 && (asprintf(&m->seats_dir, "%s/seats", config->state_dir) < 0 ||
                       asprintf(&m->quarantine_dir, "%s/evidence/quarantine", config->state_dir) < 0))
                r = -ENOMEM;
        if (r >= 0 && mkdir(m->quarantine_dir, 0700) < 0 && errno != EEXIST)
                r = seat_error_set(ret_error, errno, "create '%s': %m", m->quarantine_dir);
        m->archives_dir = config->evidence_archive_dir;
        if (r >= 0 && mkdir(m->archives_dir, 0700) < 0 && errno != EEXIST)
                r = seat_error_set(ret_error, errno, "create '%s': %m", m->archives_dir);
        if (r >= 0)
                r = load_evidence_keys(m, config, ret_error);
        if (r >= 0)
                r = domain_open(config->libvirt_uri, &m->conn, ret_error);
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
        /* Seats keep running: a restarted seatd adopts them. */
        for (size_t i = 0; i < m->n_seats; i++)
                seat_unref(m->seats[i]);
        free(m->seats);
        if (m->conn)
                virConnectClose(m->conn);
        free(m->seats_dir);
        free(m->quarantine_dir);
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
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, 0), *want = NULL;
        if (!xml || !name || strlen(name) <= strlen(SEAT_DOMAIN_PREFIX) ||
            asprintf(&want, "<source file='%s/", m->seats_dir) < 0)
                return false;
        return strstr(xml, want) != NULL;
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
                log_warning("seat '%s': no audit log after the restart: %s", s->rec.id, err ? err->message : "?");
        else
                (void) seat_audit_locked(s, "restart", NULL);
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
                log_warning("removing orphaned domain '%s' (state '%s')", name, rec.state);
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
        s->m = m;
        s->refs = 0;
        s->rec = rec;
        s->dom = dom;
        seat_set_state(s, SEAT_READY);
        if (seat_paths(m, s) < 0 || connect_agent(s, ADOPT_HELLO_TIMEOUT_MS, &err) < 0 || table_add(m, s) < 0) {
                log_warning("seat '%s' is not healthy (%s): removing it", rec.id, err ? err->message : "?");
                /* Its files are a participant's session: the sweep sets them aside, never deletes them. */
                s->agent = agent_client_free(s->agent);
                (void) domain_stop(s->dom);
                seat_free(s);
                return 0;
        }
        continue_session_after_restart(m, s);
        log_notice("adopted seat '%s' (image '%s', participant '%s')", rec.id, rec.image, rec.participant);
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
                if (asprintf(&dir, "%s/%s", m->seats_dir, de->d_name) < 0 ||
                    asprintf(&q, "%s/%s-orphan-%lld", m->quarantine_dir, de->d_name, (long long) time(NULL)) < 0)
                        break;
                /* Half-made or unhealthy: set aside whole for evidence, never reused, never
                 * silently deleted (the same filesystem: a rename). */
                log_warning("setting aside orphaned seat directory '%s' in '%s'", dir, q);
                if (rename(dir, q) < 0) {
                        log_warning("cannot set aside '%s': %m", dir);
                        continue;
                }
                (void) rmdir(q); /* only when nothing was in it */
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
                log_notice("sealing the session left in '%s' by an earlier seatd", dir);
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
                log_notice("seat '%s' is ready again: its evidence is sealed", s->rec.id);
        }
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
                int r = seal_session_dir(&ctx, dir, &archive, &err);
                if (r >= 0) {
                        log_notice("sealed the session of seat '%s' left in '%s' into '%s'", id, dir, archive);
                        json_object_array_add(sealed, json_object_new_string(archive));
                        continue;
                }
                log_error("cannot seal the session of seat '%s' in '%s': %s", id, dir, err ? err->message : strerror(-r));
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
        resume_pending_seals(m);
        return 0;
}
