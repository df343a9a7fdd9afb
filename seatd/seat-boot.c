/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-boot.c: booting a seat: disk admission, the domain's files, confinement and the agent's first hello. */
#include "seat-internal.h"

/* ---- disk admission ---- */

uint64_t file_allocated(const char *path) {
        struct stat st;
        return path && stat(path, &st) >= 0 ? (uint64_t) st.st_blocks * 512u : 0;
}

/* What the running seats may still write: each overlay can grow to its disk's virtual
 * size. Under the manager's lock. */
uint64_t disk_promised_locked(SeatManager *m, const Seat *except) {
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

/* Admits `need` bytes on the filesystem of `dir` beside everything promised to the seats
 * (but `except`) and the reserve, and promises them (disk_pending) until the caller
 * settles. One rule for seat disks and seals' output. -ENOSPC: it does not fit; what was
 * seen is returned for the caller's message. */
int disk_reserve(SeatManager *m, const char *dir, const Seat *except, uint64_t need, uint64_t *ret_avail,
                 uint64_t *ret_promised, SeatError **ret_error) {
        struct statvfs sv;
        if (statvfs(dir, &sv) < 0)
                return seat_error_set(ret_error, errno, "free space of '%s': %m", dir);
        uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize, reserve = m->config->disk_reserve_bytes;
        pthread_mutex_lock(&m->lock);
        uint64_t promised = disk_promised_locked(m, except);
        bool fits = avail >= reserve && avail - reserve >= promised && avail - reserve - promised >= need;
        if (fits)
                m->disk_pending += need;
        pthread_mutex_unlock(&m->lock);
        *ret_avail = avail;
        *ret_promised = promised;
        return fits ? 0 : -ENOSPC;
}

/* A seat boots only when its whole disk fits beside everything promised to the others and
 * the reserve: a guest that fills its disk cannot take the host's free space. */
static int disk_admit(SeatManager *m, Seat *s, uint64_t need, SeatError **ret_error) {
        uint64_t avail, promised;
        int r = disk_reserve(m, m->seats_dir, s, need, &avail, &promised, ret_error);
        if (r == -ENOSPC)
                return seat_error_set(ret_error, ENOSPC,
                                      "not enough disk space for seat '%s': %" PRIu64 " MiB free in '%s', %" PRIu64
                                      " MiB promised to running seats, %" PRIu64 " MiB needed, %" PRIu64
                                      " MiB kept in reserve (disk_reserve_bytes): free space or release seats",
                                      s->rec.id, avail >> 20, m->seats_dir, promised >> 20, need >> 20,
                                      (uint64_t) m->config->disk_reserve_bytes >> 20);
        return r;
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
void disk_settle(SeatManager *m, Seat *s) {
        pthread_mutex_lock(&m->lock);
        m->disk_pending -= MIN(s->disk_pending, m->disk_pending);
        s->disk_pending = 0;
        pthread_mutex_unlock(&m->lock);
}

void spec_files_done(SpecFiles *f) {
        FREE_MANY(f->kernel, f->initrd, f->base);
}

int spec_files(SeatManager *m, const ImageManifest *man, SpecFiles *f) {
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
int open_agent(Seat *s, int timeout_ms, SeatError **ret_error) {
        _cleanup_free_ char *sock = NULL;
        int r = domain_agent_socket(s->dom, &sock);
        if (r < 0)
                return seat_error_set(ret_error, -r, "seat '%s' has no agent channel", s->rec.id);
        s->agent = agent_client_free(s->agent);
        return agent_client_connect_unix(sock, timeout_ms, &s->agent, ret_error);
}

/* The first hello names the image: an agent that breaks the protocol (or never answers)
 * is the image's doing, and the operator must know which image to pull. */
int hello_failed(const char *kind, const char *name, const char *image, int64_t version, SeatError **ret_error) {
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

int connect_agent(Seat *s, bool fresh, int timeout_ms, SeatError **ret_error) {
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
        /* Its own uid, nobody else's (docs/security.md): libvirt honoured the static label. */
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
int boot_seat(SeatManager *m, Seat *s, const char *cold_why, SeatError **ret_error) {
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
        /* After configure: the check may need the seat's name, address and clock. */
        r = seat_wait_ready(m, s, ret_error);
        if (r < 0)
                return r;
        return session_open(m, s, ret_error);
}
