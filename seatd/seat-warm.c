/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-warm.c: warm reset: each slot identity's saved state, made and checked in the background, and restore. */
#include "common/strprintf.h"
#include "seat-internal.h"

/* ---- warm reset: saved states per slot identity ---- */

void warm_paths_done(WarmPaths *p) {
        FREE_MANY(p->dir, p->save, p->overlay, p->meta, p->save_tmp, p->overlay_tmp, p->console);
}

int warm_paths(SeatManager *m, const char *id, SeatIdentity k, WarmPaths *p) {
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
void warm_remove(const WarmPaths *p) {
        (void) unlink(p->meta);
        (void) unlink(p->save);
        (void) unlink(p->overlay);
        (void) unlink(p->save_tmp);
        (void) unlink(p->overlay_tmp);
        (void) unlink(p->console);
}
void warm_set_standby(Seat *s, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *t = vstrprintf(fmt, ap);
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
static int warm_check(SeatManager *m, Seat *s, SeatIdentity k, const char *image_digest, bool full, const WarmPaths *wp,
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

typedef struct WarmReadyWait {
        SeatManager *m;
        Seat *s;
} WarmReadyWait;

static void warm_ready_report(void *userdata, const char *what) {
        WarmReadyWait *w = userdata;
        if (what)
                warm_set_standby(w->s, "preparing: %s", what);
        else
                warm_set_standby(w->s, "preparing");
}

/* A reset or release that comes meanwhile does not wait for the range to come up. */
static bool warm_ready_cancelled(void *userdata) {
        WarmReadyWait *w = userdata;
        pthread_mutex_lock(&w->m->warm_make_lock);
        bool c = w->s->warm_make_cancel;
        pthread_mutex_unlock(&w->m->warm_make_lock);
        return c;
}

/* Boot identity k from the verified image until its agent answers and the image's
 * readiness check passes in it (the same check and ready_timeout as a seat's boot: a
 * restore is then ready at once), before anyone is configured in it, and save it (the
 * domain stops): the slot's saved state for k. The host end of the
 * agent channel stays connected through the save and is closed only once the machine is
 * gone: a host that hangs up just before the save leaves the guest with that hang-up still
 * unseen (virtio-serial tells the guest through a control queue, behind its data), and a
 * restore would then deliver it after the next host's first bytes, ending that host's
 * session under it. Saved connected, nothing is pending; a restore connects before the
 * machine runs (warm_restore), and its hello starts the new session. */
static int warm_make(SeatManager *m, Seat *s, SeatIdentity k, const SeatRecord *rec, const ImageManifest *man,
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
        if (r >= 0) {
                WarmReadyWait w = { .m = m, .s = s };
                const SeatBootProgress p = { .report = warm_ready_report, .cancelled = warm_ready_cancelled,
                                             .userdata = &w };
                char who[160];
                (void) snprintf(who, sizeof(who), "seat '%s', standby machine '%s'", rec->id, name);
                r = ready_check_wait(m, agent, rec->id, who, &p, ret_error);
        }
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
static int warm_prepare(SeatManager *m, Seat *s, SeatIdentity k, const SeatRecord *rec, SeatError **ret_error) {
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
void identity_join(Seat *s, SeatIdentity k) {
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

typedef struct WarmStateMakeJob {
        SeatManager *m;
        Seat *s;                  /* a reference */
        SeatIdentity k;
        SeatRecord rec;
} WarmStateMakeJob;

static WarmStateMakeJob *warm_state_make_job_free(WarmStateMakeJob *j) {
        if (!j)
                return NULL;
        seat_unref(j->s);
        return mfree(j);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(WarmStateMakeJob *, warm_state_make_job_free)

/* At most WARM_MAKE_PARALLEL states made at once; false when cancelled while waiting. */
static bool warm_state_make_acquire(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->warm_make_lock);
        while (m->warm_make_active >= WARM_MAKE_PARALLEL && !s->warm_make_cancel)
                pthread_cond_wait(&m->warm_make_cond, &m->warm_make_lock);
        bool go = !s->warm_make_cancel;
        if (go)
                m->warm_make_active++;
        pthread_mutex_unlock(&m->warm_make_lock);
        return go;
}

static void warm_state_make_release(SeatManager *m) {
        pthread_mutex_lock(&m->warm_make_lock);
        m->warm_make_active--;
        pthread_cond_broadcast(&m->warm_make_cond);
        pthread_mutex_unlock(&m->warm_make_lock);
}

static void *warm_state_make_thread(void *p) {
        _cleanup_(warm_state_make_job_freep) WarmStateMakeJob *j = p;
        _cleanup_error_ SeatError *err = NULL;
        if (!warm_state_make_acquire(j->m, j->s))
                warm_set_standby(j->s, "none: the reset came before its state was made");
        else {
                identity_join(j->s, j->k);
                int r = warm_prepare(j->m, j->s, j->k, &j->rec, &err);
                warm_state_make_release(j->m);
                if (r < 0) {
                        log_seat_warning(j->rec.id, "seat '%s': no saved state for warm resets: %s", j->rec.id,
                                         err ? err->message : strerror(-r));
                        warm_set_standby(j->s, "none: %s", err ? err->message : strerror(-r));
                } else
                        warm_set_standby(j->s, "ready");
        }
        return NULL;
}

/* Under s->lock: make or check the state of the identity the next reset boots. */
void warm_state_make_start(SeatManager *m, Seat *s) {
        if (!m->config->warm_reset || s->warm_make_running)
                return;
        _cleanup_(warm_state_make_job_freep) WarmStateMakeJob *j = calloc(1, sizeof(*j));
        if (!j)
                return;
        *j = (WarmStateMakeJob) { .m = m, .s = s, .k = 1 - seat_identity(s->rec.generation), .rec = s->rec };
        pthread_mutex_lock(&m->lock);
        s->refs++;
        pthread_mutex_unlock(&m->lock);
        pthread_mutex_lock(&m->warm_make_lock);
        s->warm_make_cancel = false;
        pthread_mutex_unlock(&m->warm_make_lock);
        warm_set_standby(s, "preparing");
        if (pthread_create(&s->warm_make_thread, NULL, warm_state_make_thread, j) != 0) {
                warm_set_standby(s, "none: cannot start a thread");
                return;
        }
        TAKE_PTR(j); /* the thread's now */
        s->warm_make_running = true;
}

/* Under s->lock: a preparation that has not started is dropped, one under way finished. */
void warm_state_make_stop(SeatManager *m, Seat *s) {
        if (!s->warm_make_running)
                return;
        pthread_mutex_lock(&m->warm_make_lock);
        s->warm_make_cancel = true;
        pthread_cond_broadcast(&m->warm_make_cond);
        pthread_mutex_unlock(&m->warm_make_lock);
        pthread_join(s->warm_make_thread, NULL);
        s->warm_make_running = false;
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
int warm_restore(SeatManager *m, Seat *s, const ImageManifest *man, bool kvm, char **ret_why) {
        _cleanup_(warm_paths_done) WarmPaths wp = {};
        _cleanup_(spec_files_done) SpecFiles f = {};
        _cleanup_(domain_boot_copies_done) DomainBootCopies boot = {};
        _cleanup_error_ SeatError *err = NULL;
        char digest[SEAT_HASH_HEX_LEN + 1], name[64], hash[SEAT_HASH_HEX_LEN + 1];
        SeatIdentity k = seat_identity(s->rec.generation);
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
        r = file_copy(wp.overlay, s->overlay, 0600);
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

void set_reset_mode(Seat *s, const char *mode, const char *why) {
        pthread_mutex_lock(&s->warm_lock);
        free(s->reset_mode);
        free(s->reset_reason);
        s->reset_mode = strdup(mode);
        s->reset_reason = why ? strdup(why) : NULL;
        pthread_mutex_unlock(&s->warm_lock);
}

/* Released: both identities' machines gone, their saved states removed. */
void warm_forget(SeatManager *m, Seat *s) {
        for (SeatIdentity k = 0; k < 2; k++) {
                _cleanup_(warm_paths_done) WarmPaths wp = {};
                identity_join(s, k);
                if (warm_paths(m, s->rec.id, k, &wp) >= 0) {
                        warm_remove(&wp);
                        (void) rmdir(wp.dir);
                }
        }
}

/* <state_dir>/warm: 0711 so QEMU reaches a state's overlay while it is made (by name only:
 * nothing there can be listed); every file in it 0600, the key MACing the sidecars too. */
int warm_init(SeatManager *m, const SeatConfig *config, SeatError **ret_error) {
        _cleanup_free_ char *key = NULL;
        if (asprintf(&m->warm_dir, "%s/warm", config->state_dir) < 0 || asprintf(&key, "%s/key", m->warm_dir) < 0)
                return -ENOMEM;
        if (mkdir(m->warm_dir, 0711) < 0 && errno != EEXIST)
                return seat_error_set(ret_error, errno, "create '%s': %m", m->warm_dir);
        if (chmod(m->warm_dir, 0711) < 0)
                return seat_error_set(ret_error, errno, "chmod '%s': %m", m->warm_dir);
        return warm_key_load(key, m->warm_key, ret_error);
}
