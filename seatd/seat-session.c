/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-session.c: a session's audit log and evidence paths, quarantine, and handing off to sealing. */
#include "seat-internal.h"

/* Set the session's files aside for evidence (sealed by the evidence work). */
int audit_paths(const Seat *s, char **ret_log, char **ret_key) {
        if (asprintf(ret_log, "%s/audit-g%" PRId64 ".log", s->dir, s->rec.generation) < 0)
                return -ENOMEM;
        if (asprintf(ret_key, "%s/audit-g%" PRId64 ".key", s->dir, s->rec.generation) < 0) {
                free(*ret_log);
                return -ENOMEM;
        }
        return 0;
}

/* The files of this session in the seat's directory named PREFIX-gN-REST go to the
 * quarantine as PREFIX-REST: audit segments written before a seatd restart
 * ("audit-gN-pre-T.log" and their keys) and terminal recordings ("rec-gN-K.cast" and their
 * ".dropped" counts). */
static void move_session_files(Seat *s, const char *q, const char *prefix) {
        char from_prefix[48];
        snprintf(from_prefix, sizeof(from_prefix), "%s-g%" PRId64 "-", prefix, s->rec.generation);
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (strncmp(de->d_name, from_prefix, strlen(from_prefix)) != 0)
                        continue;
                _cleanup_free_ char *from = NULL, *to = NULL;
                if (asprintf(&from, "%s/%s", s->dir, de->d_name) >= 0 &&
                    asprintf(&to, "%s/%s-%s", q, prefix, de->d_name + strlen(from_prefix)) >= 0 && rename(from, to) < 0)
                        log_seat_warning(s->rec.id, "seat '%s': cannot set aside '%s': %m", s->rec.id, from);
        }
        if (d)
                closedir(d);
}

int seat_recording_open(Seat *s, const RecordingSpec *spec, Recording **ret, char **ret_name) {
        for (unsigned k = 1; k <= RECORDINGS_MAX; k++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/rec-g%" PRId64 "-%u.cast", s->dir, s->rec.generation, k) < 0)
                        return -ENOMEM;
                int r = recording_open(path, spec, ret);
                if (r == -EEXIST)
                        continue;
                if (r < 0)
                        return r;
                if (asprintf(ret_name, "rec-%u.cast", k) < 0) {
                        *ret_name = NULL;
                        return -ENOMEM; /* (the recording is kept: the caller closes it) */
                }
                return 0;
        }
        return -ENOSPC;
}

/* What the image of this session names for evidence. An adopted seat learns it from the
 * store, if the image there is still the version the session runs. */
int remember_evidence_paths(Seat *s, const ImageManifest *man) {
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

int session_quarantine(SeatManager *m, Seat *s, char **ret_dir, SeatError **ret_error) {
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
        for (SeatIdentity k = 0; k < 10; k++) {
                _cleanup_free_ char *from = NULL, *to = NULL;
                if (asprintf(&from, "%s.%d", s->console_log, k) >= 0 && asprintf(&to, "%s.%d", c, k) >= 0 &&
                    rename(from, to) < 0 && errno != ENOENT)
                        log_seat_warning(s->rec.id, "seat '%s': cannot set aside '%s': %m", s->rec.id, from);
        }
        if ((rename(al, qal) < 0 && errno != ENOENT) || (rename(ak, qak) < 0 && errno != ENOENT))
                return seat_error_set(ret_error, errno, "set aside the audit log of seat '%s': %m", s->rec.id);
        move_session_files(s, q, "audit");
        move_session_files(s, q, "rec");
        int r = seat_capture_quarantine(s, q, ret_error);
        if (r < 0)
                return r;
        r = write_session_info(m, s, q, ret_error);
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
int session_open(SeatManager *m, Seat *s, SeatError **ret_error) {
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

void session_close(Seat *s) {
        _cleanup_error_ SeatError *err = NULL;
        seat_capture_stop(s->m, s); /* its machine is off the bridge: nothing of the next one */
        deny_summary_flush_seat(s);
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
        uint64_t avail, promised;
        int r = disk_reserve(m, m->quarantine_dir, NULL, need, &avail, &promised, ret_error);
        if (r == -ENOSPC)
                return seat_error_set(ret_error, ENOSPC,
                                      "disk full for sealing the session of seat '%s': %" PRIu64 " MiB free in '%s', %" PRIu64
                                      " MiB promised to running seats and other seals, %" PRIu64 " MiB needed (evidence caps), %" PRIu64
                                      " MiB kept in reserve (disk_reserve_bytes): free space, then 'seatctl evidence retry'",
                                      seat_id, avail >> 20, m->quarantine_dir, promised >> 20, need >> 20,
                                      (uint64_t) m->config->disk_reserve_bytes >> 20);
        return r;
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

static SealJob *seal_job_free(SealJob *j) {
        if (!j)
                return NULL;
        if (j->s)
                seat_unref(j->s);
        FREE_MANY(j->dir, j->seat_id, j);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(SealJob *, seal_job_free)
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
                atomic_fetch_add(&j->m->metrics.seal_failures, 1);
                if (j->s)
                        seat_seal_failed(j->s, j->dir, why);
        }
        changes_bump(&j->m->changes); /* the seal queue shrank, or failed */
        seal_job_free(j);
        return NULL;
}

/* s (may be NULL): the seat to fault if sealing fails; its lock is held by the caller, or
 * it is not shared yet. dir is consumed. */
void seal_dir_in_background(SeatManager *m, Seat *s, const char *seat_id, char *dir) {
        if (!m->have_facilitator) {
                log_seat_warning(seat_id,
                                 "the session of seat '%s' stays unsealed in '%s': set facilitator_key in seatd.conf",
                                 seat_id, dir);
                free(dir);
                return;
        }
        _cleanup_(seal_job_freep) SealJob *j = calloc(1, sizeof(*j));
        pthread_t t;
        if (!j) {
                free(dir);
                return;
        }
        j->dir = dir;
        j->seat_id = strdup(seat_id);
        if (!j->seat_id)
                return;
        j->m = m;
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
                return;
        }
        TAKE_PTR(j); /* the thread's now */
        pthread_detach(t);
}

void seal_in_background(SeatManager *m, Seat *s, bool keep_ref, char *dir) {
        seal_dir_in_background(m, keep_ref ? s : NULL, s->rec.id, dir);
}

/* ---- the manager ---- */

/* The host key signs archives: made at first start (its public half beside it, for
 * seat-evidence verify). The facilitator key, when configured, is what archives are
 * sealed to. */
int load_evidence_keys(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
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

/* ---- evidence still to seal ---- */

/* The seat id of a quarantine directory named "<id>-g<generation>-<time>" (NULL: not one). */
static char *quarantine_seat_id(const char *name) {
        const char *g = strstr(name, "-g");
        return g && g > name && g[2] >= '0' && g[2] <= '9' ? strndup(name, (size_t) (g - name)) : NULL;
}

/* Sessions a dead seatd left unsealed (killed while sealing, or sealing had failed): sealed
 * again now; a failure faults their seat as it would have then. */
void resume_pending_seals(SeatManager *m) {
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
