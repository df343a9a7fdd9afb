/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seat-adopt.c: adoption of running seats after a restart, and the sweeps of what no seat owns. */
#include "seat-internal.h"

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
        if (s->rec.net_index < 0 || !m->config->network)
                return 0;
        if (!(path = egress_saved_path(s)))
                return -ENOMEM;
        int r = read_file_capped(path, 64 * 1024, &text, NULL);
        if (r < 0)
                return seat_error_set(ret_error, -r, "the saved egress profile '%s': %s", path, strerror(-r));
        return seat_net_attach(m, s, s->rec.egress, (int) s->rec.net_index, text, NULL, ret_error);
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
        Seat *s = seat_new(m, 0);
        if (!s) {
                virDomainFree(dom);
                return -ENOMEM;
        }
        s->rec = rec;
        s->dom = dom;
        (void) snprintf(s->live_domain, sizeof(s->live_domain), "%s", name);
        seat_set_state(s, SEAT_READY);
        if (seat_paths(m, s) < 0 || adopt_uids(m, s, &err) < 0 || adopt_net(m, s, &err) < 0 ||
            connect_agent(s, false, ADOPT_HELLO_TIMEOUT_MS, &err) < 0 || seat_table_add(m, s) < 0) {
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
        if (seat_capture_start(m, s, &err) < 0) {
                /* Its profile wants evidence this seatd cannot take: no more calls until reset. */
                pthread_mutex_lock(&s->lock);
                seat_fault(s, err ? err->message : "its capture could not be started again");
                pthread_mutex_unlock(&s->lock);
        }
        set_reset_mode(s, "unknown", "adopted after a seatd restart");
        pthread_mutex_lock(&s->lock);
        seat_view_publish(s); /* its paths and disk, found after its state was set */
        warm_state_make_start(m, s);
        pthread_mutex_unlock(&s->lock);
        log_seat_notice(rec.id, "adopted seat '%s' (image '%s', participant '%s')", rec.id, rec.image, rec.participant);
        return 0;
}

/* Both sweeps after adoption: fn for each entry of dir (dot files skipped; dirs_only:
 * directories only) that names no seat seatd holds. fn < 0 ends the walk. */
static void sweep_seatless(SeatManager *m, const char *dir, bool dirs_only, int (*fn)(SeatManager *m, const char *name)) {
        DIR *d = opendir(dir);
        struct dirent *de;
        if (!d)
                return;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || (dirs_only && de->d_type != DT_DIR))
                        continue;
                _cleanup_(seat_unrefp) Seat *s = seat_manager_get(m, de->d_name);
                if (s)
                        continue;
                if (fn(m, de->d_name) < 0)
                        break;
        }
        closedir(d);
}

static int sweep_orphan_dir(SeatManager *m, const char *name) {
        _cleanup_free_ char *dir = NULL, *q = NULL;
        virConnectPtr c = manager_conn(m, NULL);
        seatnet_remove_orphan(m->net, c, name);
        if (c)
                virConnectClose(c);
        if (asprintf(&dir, "%s/%s", m->seats_dir, name) < 0 ||
            asprintf(&q, "%s/%s-orphan-%lld", m->quarantine_dir, name, (long long) time(NULL)) < 0)
                return -ENOMEM;
        /* Half-made or unhealthy: set aside whole for evidence, never reused, never
         * silently deleted (the same filesystem: a rename). */
        log_seat_warning(name, "setting aside orphaned seat directory '%s' in '%s'", dir, q);
        if (rename(dir, q) < 0) {
                log_seat_warning(name, "cannot set aside '%s': %m", dir);
                return 0;
        }
        (void) rmdir(q); /* only when nothing was in it */
        return 0;
}

/* Saved states of slots that are gone: nothing of them is evidence (no participant ever
 * used them), so they are deleted. */
static int sweep_warm_dir(SeatManager *m, const char *name) {
        for (SeatIdentity k = 0; k < 2; k++) {
                _cleanup_(warm_paths_done) WarmPaths wp = {};
                if (warm_paths(m, name, k, &wp) >= 0) {
                        warm_remove(&wp);
                        (void) rmdir(wp.dir);
                }
        }
        log_seat_info(name, "removed the saved states of seat slot '%s' (no such seat)", name);
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
        sweep_seatless(m, m->seats_dir, false, sweep_orphan_dir);
        sweep_seatless(m, m->warm_dir, true, sweep_warm_dir);
        resume_pending_seals(m);
        return 0;
}
